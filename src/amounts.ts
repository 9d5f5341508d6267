/** USDC amounts: decimal strings at the edges, bigint base units (6 decimals) inside. */
import { parseUnits } from "ethers";

export const USDC_DECIMALS = 6;
/** Policies store amounts as uint96 on-chain. */
export const MAX_AMOUNT = (1n << 96n) - 1n;
export const DECIMAL_AMOUNT = /^(0|[1-9]\d{0,27})(\.\d{1,6})?$/;

const UNIT = 10n ** BigInt(USDC_DECIMALS);

/** The plain decimal form in integer arithmetic (ethers' parseUnits goes through FixedNumber); anything else to ethers. */
export function toBaseUnits(decimal: string): bigint {
  const m = DECIMAL_AMOUNT.exec(decimal);
  if (!m) return parseUnits(decimal, USDC_DECIMALS);
  return BigInt(m[1]) * UNIT + BigInt((m[2] ?? ".").slice(1).padEnd(USDC_DECIMALS, "0"));
}

/**
 * Formats base units as a decimal string without trailing zeros ("1.5", "0.000001", "12", "-2.25"). Integer
 * arithmetic rather than ethers' formatUnits, which takes many times as long (a ledger page formats dozens).
 */
export function fromBaseUnits(units: bigint | string): string {
  const value = BigInt(units);
  const abs = value < 0n ? -value : value;
  const fraction = (abs % UNIT).toString().padStart(USDC_DECIMALS, "0").replace(/0+$/, "");
  return `${value < 0n ? "-" : ""}${abs / UNIT}${fraction ? `.${fraction}` : ""}`;
}

/**
 * A JSON number as the decimal it is written as: its shortest round-trip form (ECMAScript Number::toString, so 0.1 is
 * "0.1", not 0.1000000000000000055…), with an exponent written out ("1e-7" is "0.0000001"). Never rounded: the caller
 * validates the digits. Null for NaN and the infinities.
 */
export function numberToDecimal(n: number): string | null {
  if (!Number.isFinite(n)) return null;
  const text = String(n);
  const m = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!m) return text;
  const [, sign, whole, frac = "", exp] = m;
  const digits = whole + frac;
  const point = whole.length + Number(exp);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + "0".repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
