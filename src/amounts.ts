/** USDC amounts: decimal strings at the edges, bigint base units (6 decimals) inside. */
import { parseUnits } from "ethers";

export const USDC_DECIMALS = 6;
/** Policies store amounts as uint96 on-chain. */
export const MAX_AMOUNT = (1n << 96n) - 1n;
export const DECIMAL_AMOUNT = /^(0|[1-9]\d{0,27})(\.\d{1,6})?$/;

// ethers' parseUnits and formatUnits go through FixedNumber (a dozen objects a call, several calls a payment): the
// plain forms are done here with the same answers, anything else is left to ethers.
const SCALE = 10n ** BigInt(USDC_DECIMALS);

export function toBaseUnits(decimal: string): bigint {
  const m = DECIMAL_AMOUNT.exec(decimal);
  if (!m) return parseUnits(decimal, USDC_DECIMALS);
  return BigInt(m[1]) * SCALE + BigInt((m[2] ?? ".").slice(1).padEnd(USDC_DECIMALS, "0"));
}

/** Formats base units as a decimal string without trailing zeros ("1.5", "0.000001", "12"). */
export function fromBaseUnits(units: bigint | string): string {
  const n = BigInt(units);
  const abs = n < 0n ? -n : n;
  const frac = (abs % SCALE).toString().padStart(USDC_DECIMALS, "0").replace(/0+$/, "");
  return `${n < 0n ? "-" : ""}${abs / SCALE}${frac ? `.${frac}` : ""}`;
}
