/**
 * ethers' getAddress and isAddress, each address checksummed once. The checksum is a keccak of the address, and a
 * payment checks the same few addresses (the agent, the seller, USDC, the policy) a dozen times over: request schemas,
 * the signer, the verify, the seller, the indexer. Same answers, and the same error for a value getAddress refuses
 * (refusals are not kept).
 */
import { getAddress as checksum } from "ethers";

const LIMIT = 10_000;
/** The value as given -> getAddress(value). */
const known = new Map<string, string>();

/** ethers' getAddress(value). */
export function getAddress(value: string): string {
  let a = known.get(value);
  if (a === undefined) {
    a = checksum(value);
    if (known.size >= LIMIT) known.clear();
    known.set(value, a);
  }
  return a;
}

/** ethers' isAddress(value). */
export function isAddress(value: unknown): value is string {
  if (typeof value !== "string") return false;
  try {
    getAddress(value);
    return true;
  } catch {
    return false;
  }
}
