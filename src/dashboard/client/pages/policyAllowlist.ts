/**
 * The allowlist part of the policy form: entries typed or pasted, each shown as it will be signed (normalised, with
 * duplicates and non-host names marked), with its own optional daily cap and its payee: the only address payments
 * under that entry may pay. When the owner adds a merchant, the page asks the seller for its quote (POST
 * /merchants/quote, nothing is paid) and offers the payTo the seller names; she pins it with one click or types one.
 */
import { getAddress, isAddress } from "viem";
import { normalizeAllowlistEntry } from "../../../policy/allowlist";
import { api } from "../api";
import { announce, h, replace } from "../dom";
import { toUnits } from "../amounts";
import type { PolicyView } from "../types";

export interface Entry {
  raw: string;
  normalized: string | null;
  /** Its own daily cap in USDC as typed ("" = none). */
  cap: string;
  /** Its payee as typed ("" = any address). */
  payee: string;
  /** What the seller's quote said, once asked: the payTo it names, or why there is none. */
  offer?: { state: "asking" } | { state: "offered"; payTo: string; price: string | null } | { state: "none"; message: string };
}

/** Up to this many entries added at once are asked for their payee at once. */
const AUTO_ASK = 3;

/** The answer of POST /merchants/quote the form reads. */
interface MerchantQuote {
  payTo: string | null;
  price: string | null;
  advice: string;
}

/** A payee as typed: "" (any address), a checksummed address, or null when it is not an address. */
export function payeeValue(typed: string): string | null {
  const t = typed.trim();
  if (t === "") return "";
  return /^0x[0-9a-fA-F]{40}$/.test(t) && isAddress(t, { strict: false }) ? getAddress(t) : null;
}

export function allowlistEditor(current: PolicyView, agentAddress: string) {
  const entries: Entry[] = (current.deployed ? current.allowlist : []).map((raw) => ({
    raw,
    normalized: normalizeAllowlistEntry(raw),
    cap: current.merchantCaps?.[raw] ?? "",
    payee: current.payees?.[raw] ?? "",
  }));

  const listEl = h("ul", { class: "allowlist", id: "allowlist-entries", "aria-label": "Allowlist entries" });
  const allowInput = h("input", {
    id: "allowlist-input",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "allowlist-hint",
  });
  const allowError = h("p", { class: "field-error", id: "allowlist-error", hidden: true });
  const renderEntries = () => {
    const seen = new Set<string>();
    replace(
      listEl,
      entries.length
        ? entries.map((e, i) => {
            const dup = e.normalized !== null && seen.has(e.normalized);
            if (e.normalized) seen.add(e.normalized);
            return h(
              "li",
              { "data-raw": e.raw, "data-normalized": e.normalized ?? "" },
              h("code", null, e.raw),
              e.normalized === null
                ? h("span", { class: "bad" }, " — not a host name; remove it")
                : [
                    " → ",
                    h("code", { class: "normalized" }, e.normalized),
                    dup ? h("span", { class: "muted" }, " (duplicate, counted once)") : null,
                    e.normalized === "*" ? h("span", { class: "warn" }, " (any merchant)") : null,
                    dup
                      ? null
                      : h("input", {
                          class: "cap",
                          type: "text",
                          inputmode: "decimal",
                          autocomplete: "off",
                          placeholder: "no daily cap",
                          "aria-label": `Daily cap for ${e.normalized} in USDC (empty: none)`,
                          value: e.cap,
                          oninput: (ev: Event) => (e.cap = (ev.target as HTMLInputElement).value),
                        }),
                    dup ? null : payeeControls(e, e.normalized),
                  ],
              " ",
              h(
                "button",
                {
                  type: "button",
                  class: "link",
                  "aria-label": `Remove ${e.raw}`,
                  onclick: () => {
                    entries.splice(i, 1);
                    renderEntries();
                    announce(`Removed ${e.raw}.`);
                    allowInput.focus();
                  },
                },
                "Remove",
              ),
            );
          })
        : h("li", { class: "muted" }, "No merchants: the agent may pay nobody (deny by default)."),
    );
  };
  // The payee of an entry: a field (empty = any address) and, once the seller answered, its payTo to pin.
  const payeeControls = (e: Entry, normalized: string) => {
    const input = h("input", {
      class: "payee mono",
      type: "text",
      autocomplete: "off",
      spellcheck: "false",
      placeholder: "any address",
      "aria-label": `Payee for ${normalized} (empty: any address)`,
      value: e.payee,
      oninput: (ev: Event) => (e.payee = (ev.target as HTMLInputElement).value),
    });
    const o = e.offer;
    let offer: HTMLElement | null = null;
    if (!o && !normalized.includes("*")) {
      offer = h(
        "button",
        { type: "button", class: "link", "aria-label": `Ask ${normalized} for its payee`, onclick: () => void askPayee(e) },
        "Ask the seller",
      );
    } else if (o?.state === "asking") offer = h("span", { class: "muted", "data-offer": "asking" }, " asking the seller for its payee…");
    else if (o?.state === "none") offer = h("span", { class: "warn", "data-offer": "none" }, ` ${o.message}`);
    else if (o?.state === "offered") {
      const pinned = payeeValue(e.payee) === getAddress(o.payTo);
      offer = h(
        "span",
        { class: "offer", "data-offer": "offered", "data-payto": o.payTo },
        ` The seller's quote${o.price ? ` (${o.price} USDC)` : ""} asks to be paid at `,
        h("code", { class: "mono" }, o.payTo),
        " ",
        pinned
          ? h("span", { class: "muted", "data-offer-state": "pinned" }, "(pinned)")
          : h(
              "button",
              {
                type: "button",
                class: "link",
                "aria-label": `Pin ${o.payTo} as the payee of ${normalized}`,
                onclick: () => {
                  e.payee = getAddress(o.payTo);
                  renderEntries();
                  announce(`Pinned ${o.payTo} as the payee of ${normalized}.`);
                },
              },
              "Pin this payee",
            ),
      );
    }
    return h("span", { class: "payee-controls" }, " pays ", input, offer);
  };

  // Asks the seller (its URL as typed, or https://<host>/) for its 402; a wildcard names no single seller.
  const askPayee = async (e: Entry) => {
    if (!e.normalized || e.normalized.includes("*")) return;
    e.offer = { state: "asking" };
    renderEntries();
    try {
      const q = await api<MerchantQuote>("POST", "/merchants/quote", { auth: "required", body: { agentAddress, url: e.raw } });
      e.offer = q.payTo ? { state: "offered", payTo: q.payTo, price: q.price } : { state: "none", message: q.advice };
      if (q.payTo) announce(`${e.normalized} asks to be paid at ${q.payTo}. Pin it to allow only that address.`);
    } catch (err) {
      e.offer = {
        state: "none",
        message: `No payee offered (${(err as Error).message}). Type the seller's address, or leave it empty for any address.`,
      };
    }
    renderEntries();
  };

  const addEntries = () => {
    const parts = allowInput.value.split(/[\s,]+/).filter(Boolean);
    if (!parts.length) return;
    const added: Entry[] = [];
    for (const raw of parts) {
      const e: Entry = { raw, normalized: normalizeAllowlistEntry(raw), cap: "", payee: "" };
      entries.push(e);
      added.push(e);
    }
    allowInput.value = "";
    renderEntries();
    // A merchant or two added by hand: ask their sellers now. A pasted list: each entry has its "Ask the seller" button.
    if (added.length <= AUTO_ASK) for (const e of added) void askPayee(e);
    const last = entries[entries.length - 1];
    announce(last.normalized ? `Added ${last.raw} as ${last.normalized}.` : `${last.raw} is not a host name.`);
  };
  allowInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      addEntries();
    }
  });
  renderEntries();

  const element = h(
    "fieldset",
    null,
    h("legend", null, "Merchants the agent may pay (allowlist)"),
    h(
      "p",
      { id: "allowlist-hint", class: "hint" },
      "A host name such as api.example.com, *.example.com for any of its subdomains, or * for any merchant. A URL is fine: only its host is kept (and the seller is asked for its quote at that URL). Each entry is shown as it will be signed, and may have its own daily cap (UTC day; a wildcard's cap covers all its subdomains together) and its payee: the only address payments under it may pay. Pin the payee the seller's quote names; an entry without one may pay any address, even one a compromised server chose.",
    ),
    h("label", { for: "allowlist-input" }, "Merchant to add"),
    h("div", { class: "row" }, allowInput, h("button", { type: "button", id: "allowlist-add", onclick: addEntries }, "Add")),
    allowError,
    listEl,
  );
  return { entries, allowInput, allowError, element };
}

/** Normalised entries without duplicates (first wins), as the server and the contract will hold them. */
export function normalizedList(entries: Entry[]): string[] {
  const out: string[] = [];
  for (const e of entries) if (e.normalized && !out.includes(e.normalized)) out.push(e.normalized);
  return out;
}

/** Per-entry payees (checksummed), by normalised entry (the first of duplicates; empty = any address, left out). */
export function payeesOf(entries: Entry[]): Record<string, string> {
  const payees: Record<string, string> = {};
  const seen = new Set<string>();
  for (const e of entries) {
    if (!e.normalized || seen.has(e.normalized)) continue;
    seen.add(e.normalized);
    const p = payeeValue(e.payee);
    if (p) payees[e.normalized] = p;
  }
  return payees;
}

/** Per-entry daily caps in base units, by normalised entry (the first of duplicates; empty or 0 = none). */
export function capsOf(entries: Entry[]): Record<string, bigint> {
  const caps: Record<string, bigint> = {};
  const seen = new Set<string>();
  for (const e of entries) {
    if (!e.normalized || seen.has(e.normalized)) continue;
    seen.add(e.normalized);
    const units = e.cap.trim() === "" ? 0n : toUnits(e.cap);
    if (units) caps[e.normalized] = units;
  }
  return caps;
}
