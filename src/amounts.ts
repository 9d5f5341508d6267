/** USDC amounts: decimal strings at the edges, bigint base units (6 decimals) inside. */
import { formatUnits, parseUnits } from "ethers";

export const USDC_DECIMALS = 6;
/** Policies store amounts as uint96 on-chain. */
export const MAX_AMOUNT = (1n << 96n) - 1n;
export const DECIMAL_AMOUNT = /^(0|[1-9]\d{0,27})(\.\d{1,6})?$/;

export function toBaseUnits(decimal: string): bigint {
  return parseUnits(decimal, USDC_DECIMALS);
}

/** Formats base units as a decimal string without trailing zeros ("1.5", "0.000001", "12"). */
export function fromBaseUnits(units: bigint | string): string {
  const s = formatUnits(BigInt(units), USDC_DECIMALS);
  return s.endsWith(".0") ? s.slice(0, -2) : s;
}
