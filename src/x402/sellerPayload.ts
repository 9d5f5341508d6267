/**
 * What /sell/agent-intel reads of a paid request before its facilitator does (seller.ts): the shape of an exact EVM
 * payload's EIP-3009 authorization, and the refusal (an x402 reason and a sentence) its checks answer.
 */
import type { SettleResponse } from "@x402/core/types";
import type { AnyPaymentPayload } from "./facilitator";

export type Authorization = { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };

/** A refusal: reason code (x402 style) plus a sentence for people. */
export class Refusal {
  constructor(
    readonly reason: string,
    readonly message: string,
    /** A settlement broadcast and not yet confirmed (x402 settlement_pending): answered with its hash. */
    readonly pending?: SettleResponse,
  ) {}
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const MAX_UINT256 = 2n ** 256n - 1n;
const isUint256 = (v: unknown): v is string => typeof v === "string" && /^\d{1,78}$/.test(v) && BigInt(v) <= MAX_UINT256;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})+$/;

/**
 * The EIP-3009 authorization and signature of an exact EVM payload, checked for shape before anything reaches the
 * facilitator (which would otherwise throw on them, and that reads as "unreachable"): addresses, decimal uint256
 * value/validAfter/validBefore, a 32-byte hex nonce and a hex signature.
 */
export function authorizationOf(payload: AnyPaymentPayload): Authorization {
  const inner = payload.payload as { authorization?: Partial<Record<keyof Authorization, unknown>>; signature?: unknown } | undefined;
  const auth = inner?.authorization;
  if (!auth || typeof auth !== "object") throw new Refusal("invalid_payload", "The payment carries no EIP-3009 authorization.");
  const { from, to, value, validAfter, validBefore, nonce } = auth;
  const bad = (field: string, what: string) => new Refusal("invalid_payload", `The authorization's ${field} must be ${what}.`);
  if (typeof from !== "string" || !ADDRESS.test(from)) throw bad("from", "an address");
  if (typeof to !== "string" || !ADDRESS.test(to)) throw bad("to", "an address");
  if (!isUint256(value)) throw bad("value", "a decimal uint256 string");
  if (!isUint256(validAfter)) throw bad("validAfter", "a decimal uint256 string");
  if (!isUint256(validBefore)) throw bad("validBefore", "a decimal uint256 string");
  if (typeof nonce !== "string" || !BYTES32.test(nonce)) throw bad("nonce", "32 bytes of 0x-prefixed hex");
  if (typeof inner?.signature !== "string" || !HEX_BYTES.test(inner.signature)) {
    throw new Refusal("invalid_payload", "The payment's signature must be 0x-prefixed hex.");
  }
  return { from, to, value, validAfter, validBefore, nonce };
}

export const sameAddress = (a: unknown, b: string) => typeof a === "string" && a.toLowerCase() === b.toLowerCase();
