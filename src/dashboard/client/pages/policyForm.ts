/**
 * The spend-policy form: amounts, the allowlist editor (each entry with its normalisation), a review of exactly what
 * the wallet will sign (SetPolicy typed data with every allowlist entry in clear: the wallet shows them, and the
 * contract derives its root from them), then POST /limits and the deployed contract with its transaction.
 */
import { MAX_MERCHANTS, allowlistRoot, merchantsOf, payeeOverlaps } from "../../../policy/allowlist";
import { api } from "../api";
import type { App } from "../app";
import { announce, focusOn, h, replace } from "../dom";
import { fromUnits, toUnits } from "../amounts";
import { nowSeconds, setPolicyData, type TypedData } from "../typed";
import type { AgentSummary, PolicyView, SetLimitsResult } from "../types";
import { describeExtras, extraLimitsFields, remainingNow, type ExtraLimits } from "./policyLimits";
import { describeSwap, swapFields, type SwapSetting } from "./policySwap";
import { allowlistEditor, capsOf, normalizedList, payeeValue, payeesOf } from "./policyAllowlist";

interface Amounts {
  perTxLimit: bigint;
  dailyBudget: bigint;
  approvalThreshold: bigint;
}

const AMOUNT_FIELDS: { key: keyof Amounts; label: string; hint: string; fallback: string }[] = [
  { key: "perTxLimit", label: "Per-payment limit (USDC)", hint: "No single payment may be larger.", fallback: "1" },
  {
    key: "dailyBudget",
    label: "Daily budget (USDC)",
    hint: "The most the agent may spend per day (UTC), all payments together.",
    fallback: "10",
  },
  {
    key: "approvalThreshold",
    label: "Approval threshold (USDC)",
    hint: "Payments above this wait for your approval here.",
    fallback: "0.5",
  },
];

export function policyEditor(app: App, agent: AgentSummary, current: PolicyView, onDeployed: () => Promise<void>): HTMLElement {
  const allowlist = allowlistEditor(current, agent.address);
  const { entries, allowInput, allowError } = allowlist;
  const extra = extraLimitsFields(current);
  const swap = swapFields(current, agent.address);
  const inputs = {} as Record<keyof Amounts, HTMLInputElement>;
  const errors = {} as Record<keyof Amounts, HTMLElement>;

  const amountField = (f: (typeof AMOUNT_FIELDS)[number]) => {
    const id = `policy-${f.key}`;
    errors[f.key] = h("p", { id: `${id}-error`, class: "field-error", hidden: true });
    inputs[f.key] = h("input", {
      id,
      name: f.key,
      type: "text",
      inputmode: "decimal",
      autocomplete: "off",
      required: true,
      value: current.deployed ? current[f.key] : f.fallback,
      "aria-describedby": `${id}-hint`,
    });
    return h(
      "div",
      { class: "field" },
      h("label", { for: id }, f.label),
      inputs[f.key],
      h("p", { id: `${id}-hint`, class: "hint" }, f.hint),
      errors[f.key],
    );
  };

  const review = h("section", { class: "review", id: "policy-review", "aria-labelledby": "review-title", hidden: true });
  const form = h(
    "form",
    { id: "policy-form", novalidate: true },
    AMOUNT_FIELDS.map(amountField),
    allowlist.element,
    extra.element,
    swap.element,
    h("button", { type: "submit", class: "primary", id: "policy-review-button" }, "Review what you will sign"),
  );

  const readAmounts = (): Amounts | null => {
    const out = {} as Amounts;
    let ok = true;
    for (const f of AMOUNT_FIELDS) {
      const units = toUnits(inputs[f.key].value);
      const problem = units === null ? "Enter an amount like 2.50 (at most 6 decimals)." : null;
      setError(inputs[f.key], errors[f.key], problem);
      if (units === null) ok = false;
      else out[f.key] = units;
    }
    if (ok && out.perTxLimit > out.dailyBudget) {
      setError(inputs.perTxLimit, errors.perTxLimit, "The per-payment limit is above the daily budget; no payment could use it fully.");
      ok = false;
    }
    const bad = entries.filter((e) => e.normalized === null);
    const badCaps = entries.filter((e) => e.normalized !== null && e.cap.trim() !== "" && toUnits(e.cap) === null);
    const badPayees = entries.filter((e) => e.normalized !== null && payeeValue(e.payee) === null);
    // What the contract refuses too: an entry with any payee that admits a pinned one (it would undo the pin).
    const overlaps = bad.length + badPayees.length ? [] : payeeOverlaps(normalizedList(entries), payeesOf(entries));
    const tooMany = normalizedList(entries).length > MAX_MERCHANTS;
    const problems = bad.length + badCaps.length + badPayees.length + overlaps.length + Number(tooMany);
    allowError.hidden = problems === 0;
    allowError.textContent = bad.length
      ? `Remove what is not a host name: ${bad.map((e) => e.raw).join(", ")}.`
      : badCaps.length
        ? `Enter each daily cap like 2.00 (at most 6 decimals), or leave it empty: ${badCaps.map((e) => e.raw).join(", ")}.`
        : badPayees.length
          ? `Enter each payee as a 0x address (40 hex digits), or leave it empty for any address: ${badPayees.map((e) => e.raw).join(", ")}.`
          : overlaps.length
            ? overlaps
                .map(
                  ([open, pinned]) =>
                    `${open} pays any address and also admits ${pinned}, which you pinned: pin ${open} too, narrow it, or remove it.`,
                )
                .join(" ")
            : tooMany
              ? `At most ${MAX_MERCHANTS} entries can be signed.`
              : "";
    allowInput.setAttribute("aria-invalid", String(problems > 0));
    if (problems) ok = false;
    if (!ok) {
      const first = form.querySelector<HTMLElement>("[aria-invalid=true]");
      first?.focus();
    }
    return ok ? out : null;
  };

  let pending: {
    amounts: Amounts;
    extras: ExtraLimits & SwapSetting;
    caps: Record<string, bigint>;
    payees: Record<string, string>;
    list: string[];
    signedOffers: string[];
    root: string;
    timestamp: number;
    data: TypedData;
  } | null = null;

  // The contract takes only a policy newer than the one it holds: a second change within the same second as the last
  // (or the last signed on a clock ahead of this one) is signed one second after it, not refused as stale.
  const nextTimestamp = () => Math.max(nowSeconds(), (current.lastUpdated ?? 0) + 1);
  const showReview = (amounts: Amounts, extras: ExtraLimits & SwapSetting, timestamp = nextTimestamp()) => {
    const list = normalizedList(entries);
    const caps = capsOf(entries);
    const payees = payeesOf(entries);
    // The offer rule is kept for the entries that had it (the wallet prompt and the review show it).
    const signedOffers = (current.requireSignedOffer ?? []).filter((e) => list.includes(e));
    // Every entry in clear, sorted as the contract requires; the root is what the contract will derive from them.
    const merchants = merchantsOf(list, caps, payees, signedOffers);
    const root = allowlistRoot(list, caps, payees);
    const data = setPolicyData(app.config.chainId, agent.policyContract, agent.address, { ...amounts, ...extras, merchants }, timestamp);
    pending = { amounts, extras, caps, payees, list, signedOffers, root, timestamp, data };
    const usdcLine = (units: bigint) => `${fromUnits(units)} USDC (${units} base units)`;
    replace(
      review,
      h("h3", { id: "review-title", tabindex: -1 }, "What you will sign"),
      h(
        "p",
        null,
        `Your wallet signs this SetPolicy message (EIP-712) for the agent's SpendPolicy contract. The contract checks your signature itself, so the server cannot change any of it.`,
      ),
      h(
        "dl",
        { class: "facts" },
        [
          ["Agent", agent.address],
          ["Policy contract", app.addressLink(agent.policyContract)],
          ["Per-payment limit", usdcLine(amounts.perTxLimit)],
          ["Daily budget", usdcLine(amounts.dailyBudget)],
          ["Approval threshold", usdcLine(amounts.approvalThreshold)],
          ...describeExtras(extras),
          ...describeSwap(extras),
        ].map(([t, d]) => [h("dt", null, t), h("dd", null, d)]),
      ),
      h("h4", null, "Allowlist, normalised"),
      list.length
        ? h(
            "ol",
            { id: "review-allowlist" },
            list.map((e) => h("li", null, h("code", null, e))),
          )
        : h("p", { id: "review-allowlist" }, "Empty: the agent may pay nobody."),
      Object.keys(caps).length
        ? h(
            "ul",
            { id: "review-caps" },
            Object.entries(caps).map(([e, c]) => h("li", null, h("code", null, e), ` at most ${usdcLine(c)} per UTC day`)),
          )
        : null,
      list.length
        ? h(
            "ul",
            { id: "review-payees" },
            list.map((e) =>
              h(
                "li",
                { "data-entry": e, "data-payee": payees[e] ?? "" },
                h("code", null, e),
                payees[e] ? [" pays only ", h("code", null, payees[e])] : " pays any address (no payee pinned)",
              ),
            ),
          )
        : null,
      list.some((e) => !payees[e])
        ? h(
            "p",
            { class: "warn", id: "review-unpinned" },
            "Entries without a pinned payee can pay any address: a compromised server could pay itself under them, within your budgets.",
          )
        : null,
      signedOffers.length
        ? h(
            "ul",
            { id: "review-signed-offers" },
            signedOffers.map((e) =>
              h("li", null, h("code", null, e), " is paid only when its seller signs its offer (kept by the service)"),
            ),
          )
        : null,
      h(
        "p",
        { class: "hint" },
        "Your wallet shows every entry, daily cap and payee above: the contract keeps exactly these. It derives the root payments are checked against from them itself: ",
        h("code", { id: "review-root" }, root),
        ".",
      ),
      h("h4", null, "Typed data"),
      h(
        "pre",
        { class: "typed", id: "review-typed-data", tabindex: 0, "aria-label": "SetPolicy typed data" },
        JSON.stringify(data, null, 2),
      ),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          { type: "button", class: "primary", id: "policy-sign", onclick: (e: Event) => sign(e.currentTarget as HTMLButtonElement) },
          current.deployed ? "Sign and update the policy" : "Sign and deploy the policy",
        ),
        h(
          "button",
          {
            type: "button",
            id: "policy-edit",
            onclick: () => {
              review.hidden = true;
              inputs.perTxLimit.focus();
            },
          },
          "Change something",
        ),
      ),
    );
    review.hidden = false;
    focusOn(review.querySelector<HTMLElement>("#review-title"));
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    app.clearAlerts();
    const amounts = readAmounts();
    const extras = extra.read();
    const swapSetting = swap.read();
    if (amounts && extras && swapSetting) showReview(amounts, { ...extras, ...swapSetting });
  });

  const result = h("div", { id: "policy-result", "aria-live": "polite" });

  const sign = async (button: HTMLButtonElement) => {
    if (!pending) return;
    app.clearAlerts();
    // A review left open too long would be refused (the server takes ±window s): sign what is shown, refreshed.
    if (nowSeconds() - pending.timestamp > app.config.signatureWindowSeconds / 2) showReview(pending.amounts, pending.extras);
    const p = pending;
    const label = button.textContent;
    button.disabled = true;
    button.textContent = "Waiting for your wallet…";
    try {
      const { wallet, owner } = await app.signer();
      const humanSignature = await wallet.signTypedData(owner, p.data);
      button.textContent = current.deployed ? "Updating on-chain…" : "Deploying on-chain…";
      const res = await api<SetLimitsResult>("POST", "/limits", {
        auth: "required",
        body: {
          agentAddress: agent.address,
          perTxLimit: fromUnits(p.amounts.perTxLimit),
          dailyBudget: fromUnits(p.amounts.dailyBudget),
          allowlist: p.list,
          approvalThreshold: fromUnits(p.amounts.approvalThreshold),
          hourlyBudget: fromUnits(p.extras.hourlyBudget),
          weeklyBudget: fromUnits(p.extras.weeklyBudget),
          monthlyBudget: fromUnits(p.extras.monthlyBudget),
          lifetimeBudget: fromUnits(p.extras.lifetimeBudget),
          maxPaymentsPerHour: Number(p.extras.maxPaymentsPerHour),
          validUntil: Number(p.extras.validUntil),
          maxSwapSlippageBps: Number(p.extras.maxSwapSlippageBps),
          swapTwapSeconds: Number(p.extras.swapTwapSeconds),
          minSwapRate: fromUnits(p.extras.minSwapRate),
          merchantCaps: Object.fromEntries(Object.entries(p.caps).map(([e, c]) => [e, fromUnits(c)])),
          payees: p.payees,
          requireSignedOffer: p.signedOffers,
          humanSignature,
          timestamp: p.timestamp,
        },
      });
      replace(
        result,
        h(
          "div",
          { class: "notice", "data-state": "deployed" },
          h("p", null, h("strong", null, current.deployed ? "Policy updated on-chain." : "Policy deployed on-chain.")),
          h(
            "p",
            null,
            "Contract: ",
            app.addressLink(res.policyContract),
            h("code", { class: "block", id: "deployed-contract" }, res.policyContract),
          ),
          h(
            "p",
            null,
            "Transaction: ",
            app.txLink(res.txHash),
            res.txHash ? h("code", { class: "block", id: "deployed-tx" }, res.txHash) : null,
          ),
        ),
      );
      review.hidden = true;
      button.textContent = label;
      button.disabled = false;
      current = { ...current, deployed: true, lastUpdated: p.timestamp };
      announce("The policy is active on-chain.");
      await onDeployed();
    } catch (err) {
      app.report(err, "set the policy");
      button.disabled = false;
      button.textContent = label;
    }
  };

  return h(
    "div",
    null,
    current.deployed ? h("p", null, "The agent already has a policy; change it here. Every field is signed again.") : null,
    remainingNow(current),
    form,
    review,
    result,
  );
}

function setError(input: HTMLInputElement, el: HTMLElement, message: string | null): void {
  el.hidden = !message;
  el.textContent = message ?? "";
  input.setAttribute("aria-invalid", String(!!message));
  const ids = new Set((input.getAttribute("aria-describedby") ?? "").split(" ").filter(Boolean));
  if (message) ids.add(el.id);
  else ids.delete(el.id);
  input.setAttribute("aria-describedby", [...ids].join(" "));
}
