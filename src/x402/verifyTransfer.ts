/**
 * The verify step of a payment SpendGate makes (DESIGN section 7 step 6), before its signed authorisation leaves for
 * the seller: what an x402 facilitator's `verify` checks of an exact EIP-3009 payment, with the settlement itself
 * simulated as its one chain call.
 *
 * Why not the facilitator's `verify`: it asks the chain twice in a row, the wallet's ERC-1271 answer and then a
 * simulation of `transferWithAuthorization`, and that simulation runs the same ERC-1271 check inside USDC (FiatToken
 * v2.2's SignatureChecker), with the balance, the nonce and the validity window besides. One call decides the same;
 * a remote facilitator (FACILITATOR_URL) would add an HTTP round trip as well. The seller's own facilitator still
 * verifies before it settles, whatever we conclude here. A refusal names the reason with the x402 codes, read by one
 * more call only when the simulation failed.
 */
import type { VerifyResponse } from "@x402/core/types";
import { getAddress } from "../chain/rpc/checksum";
import type { ChainClient } from "../chain/client";
import { addressOf, encodeCall, interfaceOf, readOf } from "../chain/contracts";
import type { Quote, SignedPayment } from "./buyer";

/** The x402 exact-EVM refusal codes this check can answer (as @x402/evm's facilitator names them). */
export const VERIFY_REASONS = {
  missingDomain: "invalid_exact_evm_missing_eip712_domain",
  recipient: "invalid_exact_evm_recipient_mismatch",
  value: "invalid_exact_evm_payload_authorization_value_mismatch",
  validBefore: "invalid_exact_evm_payload_authorization_valid_before",
  validAfter: "invalid_exact_evm_payload_authorization_valid_after",
  nonceUsed: "invalid_exact_evm_nonce_already_used",
  nameMismatch: "invalid_exact_evm_token_name_mismatch",
  versionMismatch: "invalid_exact_evm_token_version_mismatch",
  insufficient: "invalid_exact_evm_insufficient_balance",
  simulation: "invalid_exact_evm_transaction_simulation_failed",
} as const;

/** The seconds a signed transfer must still be valid for when it leaves (the x402 facilitator's margin). */
const VALID_BEFORE_MARGIN_S = 6;
const TRANSFER = "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)";

interface SignedAuthorization {
  authorization: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };
  signature: string;
}

/** Verifies the signed payment `signed` for `quote` on `chain`, as the facilitator's verify would. */
export async function verifyTransfer(chain: ChainClient, quote: Quote, signed: SignedPayment, now = Date.now()): Promise<VerifyResponse> {
  const fields = checkFields(quote, signed, now);
  if (!fields.isValid) return fields;
  const { authorization: auth, signature } = signed.payload.payload as unknown as SignedAuthorization;
  const usdc = addressOf(chain.usdc);
  const data = encodeCall(interfaceOf("Usdc"), TRANSFER, [
    auth.from,
    auth.to,
    auth.value,
    auth.validAfter,
    auth.validBefore,
    auth.nonce,
    signature,
  ]);
  try {
    await chain.rpc.call(usdc, data);
    return fields;
  } catch (err) {
    const invalidMessage = (err as { shortMessage?: string; message?: string }).shortMessage ?? (err as Error).message;
    return { isValid: false, invalidReason: await diagnose(chain, quote, auth), payer: fields.payer, invalidMessage };
  }
}

/**
 * The same verify for a transfer whose settlement the chain has answered already, with no call: its authorisation
 * landed (the wallet's ERC-1271 answers for it), the wallet's USDC read just before it covers the amount, and its nonce
 * is new. What is left are the fields and the token's EIP-712 domain, read once per chain client. The seller's own
 * facilitator still verifies before it settles: USDC leaving the wallet in between (only its owner can move it outside
 * an authorised payment), or a token that refuses it, is refused there, and the payment released like any unsettled one.
 */
export async function verifyKnown(chain: ChainClient, quote: Quote, signed: SignedPayment, now = Date.now()): Promise<VerifyResponse> {
  const fields = checkFields(quote, signed, now);
  if (!fields.isValid) return fields;
  const extra = quote.requirement.extra as { name: string; version: string };
  const domain = await tokenDomain(chain);
  if (domain.name !== extra.name) return { isValid: false, invalidReason: VERIFY_REASONS.nameMismatch, payer: fields.payer };
  if (domain.version !== extra.version) return { isValid: false, invalidReason: VERIFY_REASONS.versionMismatch, payer: fields.payer };
  return fields;
}

/** The facilitator's checks of the signed authorisation's fields against the requirement and the clock. */
function checkFields(quote: Quote, signed: SignedPayment, now: number): VerifyResponse {
  const { authorization: auth } = signed.payload.payload as unknown as SignedAuthorization;
  const payer = auth.from;
  const refuse = (invalidReason: string): VerifyResponse => ({ isValid: false, invalidReason, payer });
  const req = quote.requirement;
  const extra = req.extra as { name?: unknown; version?: unknown } | undefined;
  if (typeof extra?.name !== "string" || typeof extra.version !== "string") return refuse(VERIFY_REASONS.missingDomain);
  if (getAddress(auth.to) !== getAddress(req.payTo)) return refuse(VERIFY_REASONS.recipient);
  // The quote's amount: the requirement's `amount` (v2) or `maxAmountRequired` (v1), as parsed when it was quoted.
  if (BigInt(auth.value) !== quote.amount) return refuse(VERIFY_REASONS.value);
  const seconds = BigInt(Math.floor(now / 1000));
  if (BigInt(auth.validBefore) < seconds + BigInt(VALID_BEFORE_MARGIN_S)) return refuse(VERIFY_REASONS.validBefore);
  if (BigInt(auth.validAfter) > seconds) return refuse(VERIFY_REASONS.validAfter);
  return { isValid: true, payer };
}

/** The token's EIP-712 domain name and version, read once per chain client (they are constants of the contract). */
const domains = new WeakMap<ChainClient, Promise<{ name: string | null; version: string | null }>>();
function tokenDomain(chain: ChainClient): Promise<{ name: string | null; version: string | null }> {
  let known = domains.get(chain);
  if (!known) {
    known = chain
      .readMany([readOf(chain.usdc, "name"), readOf(chain.usdc, "version")] as const)
      .then(([name, version]) => ({ name, version }));
    // A failed read is asked again next time.
    known.catch(() => domains.delete(chain));
    domains.set(chain, known);
  }
  return known;
}

/** Why the simulated settlement failed, in the facilitator's terms (its diagnosis, in one Multicall3 call). */
async function diagnose(chain: ChainClient, quote: Quote, auth: SignedAuthorization["authorization"]): Promise<string> {
  const extra = quote.requirement.extra as { name?: string; version?: string };
  const [balance, used, name, version] = await chain
    .readMany([
      readOf(chain.usdc, "balanceOf", auth.from),
      readOf(chain.usdc, "authorizationState", auth.from, auth.nonce),
      readOf(chain.usdc, "name"),
      readOf(chain.usdc, "version"),
    ] as const)
    .catch(() => [null, null, null, null] as const);
  if (used === true) return VERIFY_REASONS.nonceUsed;
  if (name !== null && name !== extra.name) return VERIFY_REASONS.nameMismatch;
  if (version !== null && version !== extra.version) return VERIFY_REASONS.versionMismatch;
  if (balance !== null && balance < BigInt(auth.value)) return VERIFY_REASONS.insufficient;
  return VERIFY_REASONS.simulation;
}
