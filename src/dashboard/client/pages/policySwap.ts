/**
 * The swap setting of the policy form (issue 12): whether the agent's wallet may buy missing USDC with its WETH or
 * ETH before paying, and at most how far above the pool's average (TWAP) price. Both numbers are part of the signed
 * SetPolicy and checked by the wallet contract; slippage empty or 0 means no swaps (the default).
 */
import { api } from "../api";
import { fromUnits, toUnits } from "../amounts";
import { h } from "../dom";
import type { PolicyView } from "../types";

export interface SwapSetting {
  maxSwapSlippageBps: bigint;
  swapTwapSeconds: bigint;
  /** The price floor: USDC base units per 1 WETH (0 = none). */
  minSwapRate: bigint;
}

// What POST /limits accepts (src/schemas/limits.ts).
const MAX_BPS = 1_000;
const TWAP = { min: 60, max: 3_600, fallback: 600 };

/** The swap fieldset and its reader (null when an entry is invalid; each error shown at its field). */
export function swapFields(current: PolicyView, agentAddress: string): { element: HTMLElement; read: () => SwapSetting | null } {
  const on = current.deployed && (current.maxSwapSlippageBps ?? 0) > 0;
  const field = (id: string, label: string, hint: string, input: HTMLInputElement) => {
    const error = h("p", { id: `${id}-error`, class: "field-error", hidden: true });
    input.setAttribute("aria-describedby", `${id}-hint`);
    return {
      input,
      error,
      el: h("div", { class: "field" }, h("label", { for: id }, label), input, h("p", { id: `${id}-hint`, class: "hint" }, hint), error),
    };
  };
  const text = (id: string, name: string, value: string, placeholder: string) =>
    h("input", { id, name, type: "text", inputmode: "decimal", autocomplete: "off", value, placeholder });
  const slippage = field(
    "policy-maxSwapSlippage",
    "Largest swap slippage (%)",
    `The most a swap may pay above the pool's average price (plus its 0.05% fee), 0.01 to ${MAX_BPS / 100}%. Empty or 0: no swaps.`,
    text("policy-maxSwapSlippage", "maxSwapSlippage", on ? String((current.maxSwapSlippageBps ?? 0) / 100) : "", "no swaps"),
  );
  const twap = field(
    "policy-swapTwapSeconds",
    "Average price over (seconds)",
    `The window of the average (TWAP) price swaps are held to, ${TWAP.min} to ${TWAP.max} s. Empty: ${TWAP.fallback} s.`,
    text("policy-swapTwapSeconds", "swapTwapSeconds", on ? String(current.swapTwapSeconds ?? TWAP.fallback) : "", String(TWAP.fallback)),
  );
  const floor = field(
    "policy-minSwapRate",
    "Lowest swap price (USDC per 1 WETH)",
    "A swap never sells WETH below this price, whatever the pool's average says (someone holding a thin pool off-price for the whole window cannot set the agent's price). Empty or 0: no floor.",
    text(
      "policy-minSwapRate",
      "minSwapRate",
      current.deployed && current.minSwapRate && current.minSwapRate !== "0" ? current.minSwapRate : "",
      "no floor",
    ),
  );
  // The pool's average price now, beside the floor: read from the chain through GET /agents/:address/swap-price.
  const twapNow = h("p", { class: "hint", id: "policy-twap", "aria-live": "polite" }, "Reading the pool's average price…");
  floor.el.appendChild(twapNow);
  const loadTwap = async () => {
    const t = twap.input.value.trim();
    const seconds = /^\d+$/.test(t) && Number(t) >= TWAP.min && Number(t) <= TWAP.max ? Number(t) : TWAP.fallback;
    try {
      const r = await api<{ usdcPerWeth: string | null; twapSeconds: number }>(
        "GET",
        `/agents/${agentAddress}/swap-price?twapSeconds=${seconds}`,
        { auth: "required" },
      );
      twapNow.dataset.price = r.usdcPerWeth ?? "";
      twapNow.textContent = r.usdcPerWeth
        ? `The pool's average price now: 1 WETH ≈ ${r.usdcPerWeth} USDC (over ${r.twapSeconds} s).`
        : "The pool has no average price to show now (no pool, or not enough history).";
    } catch {
      twapNow.textContent = "The pool's average price could not be read now.";
    }
  };
  // Turning swaps on with no floor: propose 90% of the pool's average price now (the owner may change or clear it).
  let proposed = on; // already on when the form opened: what the owner signed stays as it was
  const proposeFloor = () => {
    const price = twapNow.dataset.price ? toUnits(twapNow.dataset.price) : null;
    const s = slippage.input.value.trim().replace(/%$/, "");
    if (proposed || !price || s === "" || Number(s) === 0 || floor.input.value.trim() !== "") return;
    proposed = true;
    floor.input.value = fromUnits((price * 9n) / 10n);
    floor.input.dataset.proposed = "true";
    twapNow.textContent += " Proposed floor: 90% of it. Change it, or clear it for no floor.";
  };
  void loadTwap().then(proposeFloor);
  twap.input.addEventListener("change", () => void loadTwap());
  slippage.input.addEventListener("input", proposeFloor);
  const show = (f: { input: HTMLInputElement; error: HTMLElement }, message: string | null) => {
    f.error.hidden = !message;
    f.error.textContent = message ?? "";
    f.input.setAttribute("aria-invalid", String(!!message));
  };
  const read = (): SwapSetting | null => {
    const s = slippage.input.value.trim().replace(/%$/, "");
    // Percent with at most two decimals is a whole number of basis points.
    const bps = s === "" ? 0 : /^\d+(\.\d{1,2})?$/.test(s) ? Math.round(Number(s) * 100) : NaN;
    const bpsOk = Number.isInteger(bps) && bps >= 0 && bps <= MAX_BPS;
    show(slippage, bpsOk ? null : `Enter a percentage from 0.01 to ${MAX_BPS / 100} (at most 2 decimals), or leave it empty for no swaps.`);
    const f = floor.input.value.trim();
    const rate = f === "" ? 0n : toUnits(f);
    show(floor, rate === null ? "Enter a price like 2500 or 2500.50 USDC (at most 6 decimals), or leave it empty for no floor." : null);
    if (!bpsOk || rate === null) return null;
    if (bps === 0) {
      show(twap, null);
      return { maxSwapSlippageBps: 0n, swapTwapSeconds: 0n, minSwapRate: rate };
    }
    const t = twap.input.value.trim();
    const seconds = t === "" ? TWAP.fallback : /^\d+$/.test(t) ? Number(t) : NaN;
    const twapOk = Number.isInteger(seconds) && seconds >= TWAP.min && seconds <= TWAP.max;
    show(twap, twapOk ? null : `Enter a whole number of seconds from ${TWAP.min} to ${TWAP.max}.`);
    return twapOk ? { maxSwapSlippageBps: BigInt(bps), swapTwapSeconds: BigInt(seconds), minSwapRate: rate } : null;
  };
  const element = h(
    "fieldset",
    { id: "policy-swap" },
    h("legend", null, "Swaps before paying (optional)"),
    h(
      "p",
      { class: "hint" },
      "When the agent holds less USDC than a price, its wallet can buy exactly the missing USDC with its WETH or ETH on Uniswap v3 first. The wallet contract refuses any swap above the average price plus this slippage.",
    ),
    slippage.el,
    twap.el,
    floor.el,
  );
  return { element, read };
}

/** Review lines for the swap setting. */
export function describeSwap(s: SwapSetting): [string, string][] {
  const floor: [string, string] = [
    "Lowest swap price",
    s.minSwapRate === 0n ? "no floor (minSwapRate 0)" : `${fromUnits(s.minSwapRate)} USDC per 1 WETH (minSwapRate ${s.minSwapRate})`,
  ];
  if (s.maxSwapSlippageBps === 0n) return [["Swaps", "off (0)"], floor];
  return [
    floor,
    [
      "Swaps",
      `allowed, at most ${Number(s.maxSwapSlippageBps) / 100}% above the average price (maxSwapSlippageBps ${s.maxSwapSlippageBps})`,
    ],
    ["Average price over", `${s.swapTwapSeconds} s (swapTwapSeconds)`],
  ];
}
