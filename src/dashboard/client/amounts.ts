/** USDC amounts in the page: decimal strings for people, base units (6 decimals) for signatures. */
export const USDC_DECIMALS = 6;
/** The API's rule (src/amounts.ts DECIMAL_AMOUNT): digits, at most 6 decimals, no sign or exponent. */
const DECIMAL = /^(0|[1-9]\d{0,27})(\.\d{1,6})?$/;

/** Base units of a decimal USDC amount, or null when it is not one. */
export function toUnits(decimal: string): bigint | null {
  const v = decimal.trim();
  if (!DECIMAL.test(v)) return null;
  const [whole, frac = ""] = v.split(".");
  return BigInt(whole) * 10n ** 6n + BigInt(frac.padEnd(USDC_DECIMALS, "0"));
}

/** "1.5" from 1500000n. */
export function fromUnits(units: bigint): string {
  const whole = units / 1_000_000n;
  const frac = (units % 1_000_000n).toString().padStart(USDC_DECIMALS, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : whole.toString();
}

/** "1.50 USDC" style for display (at least 2 decimals, never rounded). */
export function usdc(decimal: string): string {
  const units = toUnits(decimal);
  if (units === null) return `${decimal} USDC`;
  const [whole, frac = ""] = fromUnits(units).split(".");
  return `${whole}.${frac.padEnd(2, "0")} USDC`;
}

/** "2.00 ETH" from the API's "2.0" (any decimal string): at least 2 decimals like USDC amounts, never rounded. */
export function tokenAmount(decimal: string, symbol: string): string {
  if (!/^\d+(\.\d+)?$/.test(decimal)) return `${decimal} ${symbol}`;
  const [whole, frac = ""] = decimal.split(".");
  return `${whole}.${frac.replace(/0+$/, "").padEnd(2, "0")} ${symbol}`;
}
