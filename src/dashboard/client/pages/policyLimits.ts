/**
 * The richer limits of the policy form (issue 14): optional budgets per hour, 7 days, 30 days and lifetime, a cap on
 * payments per hour, an expiry, and what remains now in each window. Every one is part of the signed SetPolicy;
 * empty means 0, "no such limit".
 */
import { h } from "../dom";
import { fromUnits, toUnits, usdc } from "../amounts";
import type { PolicyView } from "../types";

export interface ExtraLimits {
  hourlyBudget: bigint;
  weeklyBudget: bigint;
  monthlyBudget: bigint;
  lifetimeBudget: bigint;
  maxPaymentsPerHour: bigint;
  validUntil: bigint;
}

type BudgetKey = "hourlyBudget" | "weeklyBudget" | "monthlyBudget" | "lifetimeBudget";

const BUDGETS: { key: BudgetKey; label: string; hint: string }[] = [
  { key: "hourlyBudget", label: "Hourly budget (USDC)", hint: "The most per UTC hour (fixed hours, 10:00 to 11:00)." },
  {
    key: "weeklyBudget",
    label: "Weekly budget (USDC)",
    hint: "The most per 7-day window (fixed windows of the Unix epoch: Thursday 00:00 UTC to the next).",
  },
  {
    key: "monthlyBudget",
    label: "30-day budget (USDC)",
    hint: "The most per 30-day window (fixed windows from the Unix epoch, not calendar months).",
  },
  {
    key: "lifetimeBudget",
    label: "Lifetime budget (USDC)",
    hint: "The most in total, counting the payments made while a lifetime budget is set.",
  },
];

const MAX_PER_HOUR = 65_535;
const MAX_UNTIL = 2 ** 32 - 1;

/** "2026-11-24T10:00" (an <input type=datetime-local> value, read as UTC) from Unix seconds. */
const toLocalValue = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 16);

/** The optional limits fieldset and its reader (null when an entry is invalid; each error shown at its field). */
export function extraLimitsFields(current: PolicyView): { element: HTMLElement; read: () => ExtraLimits | null } {
  const field = (id: string, label: string, hint: string, input: HTMLInputElement) => {
    const error = h("p", { id: `${id}-error`, class: "field-error", hidden: true });
    input.setAttribute("aria-describedby", `${id}-hint`);
    return {
      error,
      el: h("div", { class: "field" }, h("label", { for: id }, label), input, h("p", { id: `${id}-hint`, class: "hint" }, hint), error),
    };
  };
  const amountInputs = {} as Record<BudgetKey, { input: HTMLInputElement; error: HTMLElement }>;
  const fields: HTMLElement[] = [];
  for (const b of BUDGETS) {
    const value = current.deployed && current[b.key] && current[b.key] !== "0" ? current[b.key] : "";
    const input = h("input", {
      id: `policy-${b.key}`,
      name: b.key,
      type: "text",
      inputmode: "decimal",
      autocomplete: "off",
      value,
      placeholder: "none",
    });
    const f = field(input.id, b.label, `${b.hint} Empty: none.`, input);
    amountInputs[b.key] = { input, error: f.error };
    fields.push(f.el);
  }
  const perHour = h("input", {
    id: "policy-maxPaymentsPerHour",
    name: "maxPaymentsPerHour",
    type: "text",
    inputmode: "numeric",
    autocomplete: "off",
    placeholder: "none",
    value: current.deployed && current.maxPaymentsPerHour ? String(current.maxPaymentsPerHour) : "",
  });
  const perHourField = field(
    perHour.id,
    "Payments per hour",
    `At most this many payments per UTC hour (1 to ${MAX_PER_HOUR}). Empty: no limit.`,
    perHour,
  );
  const until = h("input", {
    id: "policy-validUntil",
    name: "validUntil",
    type: "datetime-local",
    value: current.deployed && current.validUntil ? toLocalValue(current.validUntil) : "",
  });
  const untilField = field(
    until.id,
    "Valid until (UTC)",
    "After this moment every payment is blocked until you sign a new policy. Empty: no expiry.",
    until,
  );
  fields.push(perHourField.el, untilField.el);

  const show = (input: HTMLInputElement, error: HTMLElement, message: string | null) => {
    error.hidden = !message;
    error.textContent = message ?? "";
    input.setAttribute("aria-invalid", String(!!message));
  };
  const read = (): ExtraLimits | null => {
    const out = {} as ExtraLimits;
    let ok = true;
    for (const b of BUDGETS) {
      const { input, error } = amountInputs[b.key];
      const units = input.value.trim() === "" ? 0n : toUnits(input.value);
      show(input, error, units === null ? "Enter an amount like 25.00 (at most 6 decimals), or leave it empty." : null);
      if (units === null) ok = false;
      else out[b.key] = units;
    }
    const n = perHour.value.trim();
    const count = n === "" ? 0 : /^\d+$/.test(n) ? Number(n) : NaN;
    const countOk = Number.isInteger(count) && count <= MAX_PER_HOUR;
    show(perHour, perHourField.error, countOk ? null : `Enter a whole number up to ${MAX_PER_HOUR}, or leave it empty.`);
    ok &&= countOk;
    out.maxPaymentsPerHour = BigInt(countOk ? count : 0);
    const seconds = until.value ? Math.floor(Date.parse(`${until.value}Z`) / 1000) : 0;
    const untilOk = Number.isFinite(seconds) && seconds >= 0 && seconds <= MAX_UNTIL;
    show(until, untilField.error, untilOk ? null : "Enter a date and time, or leave it empty.");
    ok &&= untilOk;
    out.validUntil = BigInt(untilOk ? seconds : 0);
    return ok ? out : null;
  };
  const element = h(
    "fieldset",
    { id: "policy-extra-limits" },
    h("legend", null, "More limits (optional)"),
    h(
      "p",
      { class: "hint" },
      "Each is enforced by the contract in the same transaction as the payment. Windows are fixed and aligned to UTC.",
    ),
    fields,
  );
  return { element, read };
}

/** Review lines for the optional limits (only those that are set). */
export function describeExtras(x: ExtraLimits): [string, string][] {
  const lines: [string, string][] = [];
  for (const b of BUDGETS)
    if (x[b.key] > 0n) lines.push([b.label.replace(" (USDC)", ""), `${fromUnits(x[b.key])} USDC (${x[b.key]} base units)`]);
  if (x.maxPaymentsPerHour > 0n) lines.push(["Payments per hour", String(x.maxPaymentsPerHour)]);
  if (x.validUntil > 0n) lines.push(["Valid until", `${new Date(Number(x.validUntil) * 1000).toISOString()} (${x.validUntil})`]);
  return lines;
}

/** What remains now in each window, per capped merchant and of the hour's payments (deployed policies only). */
export function remainingNow(p: PolicyView): HTMLElement | null {
  if (!p.deployed || !p.windows) return null;
  const when = (s: number | null) => (s === null ? "never resets" : `resets ${new Date(s * 1000).toISOString().replace(".000Z", "Z")}`);
  const rows = p.windows.map((w) =>
    h(
      "tr",
      { "data-window": w.window },
      h("th", { scope: "row" }, w.window),
      h("td", { "data-label": "Budget" }, usdc(w.budget)),
      h("td", { "data-label": "Spent" }, usdc(w.spent)),
      h("td", { "data-field": "remaining", "data-label": "Remaining" }, usdc(w.remaining)),
      h("td", null, when(w.resetsAt)),
    ),
  );
  const caps = Object.entries(p.merchantCaps ?? {});
  return h(
    "section",
    { id: "policy-remaining", "aria-labelledby": "policy-remaining-title" },
    h("h3", { id: "policy-remaining-title" }, "What remains now"),
    h(
      "table",
      { class: "cards" },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["Window", "Budget", "Spent", "Remaining", "Resets"].map((t) => h("th", { scope: "col" }, t)),
        ),
      ),
      h("tbody", null, rows),
    ),
    p.velocity && p.velocity.maxPaymentsPerHour > 0
      ? h(
          "p",
          { id: "policy-remaining-velocity" },
          `Payments this hour: ${p.velocity.paymentsThisHour} of ${p.velocity.maxPaymentsPerHour} (${p.velocity.remaining} left).`,
        )
      : null,
    caps.length
      ? h(
          "ul",
          { id: "policy-remaining-merchants" },
          caps.map(([e, cap]) =>
            h("li", null, h("code", null, e), ` ${usdc(p.merchantRemainingToday?.[e] ?? cap)} left today of ${usdc(cap)}`),
          ),
        )
      : null,
    p.validUntil ? h("p", null, `Valid until ${new Date(p.validUntil * 1000).toISOString()}.`) : null,
  );
}
