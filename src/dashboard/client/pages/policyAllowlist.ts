/**
 * The allowlist part of the policy form: entries typed or pasted, each shown as it will be signed (normalised, with
 * duplicates and non-host names marked) and with its own optional daily cap.
 */
import { normalizeAllowlistEntry } from "../../../policy/allowlist";
import { announce, h, replace } from "../dom";
import { toUnits } from "../amounts";
import type { PolicyView } from "../types";

export interface Entry {
  raw: string;
  normalized: string | null;
  /** Its own daily cap in USDC as typed ("" = none). */
  cap: string;
}

export function allowlistEditor(current: PolicyView) {
  const entries: Entry[] = (current.deployed ? current.allowlist : []).map((raw) => ({
    raw,
    normalized: normalizeAllowlistEntry(raw),
    cap: current.merchantCaps?.[raw] ?? "",
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
  const addEntries = () => {
    const parts = allowInput.value.split(/[\s,]+/).filter(Boolean);
    if (!parts.length) return;
    for (const raw of parts) entries.push({ raw, normalized: normalizeAllowlistEntry(raw), cap: "" });
    allowInput.value = "";
    renderEntries();
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
      "A host name such as api.example.com, *.example.com for any of its subdomains, or * for any merchant. A URL is fine: only its host is kept. Each entry is shown as it will be signed, and may have its own daily cap (UTC day; a wildcard's cap covers all its subdomains together).",
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
