/**
 * An upto payment as the stock @x402/evm upto client signs it, through the agent wallet: a Permit2 witness transfer
 * of at most the seller's price (the ceiling) to its payTo, settleable only by the facilitator the seller named.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentPayload } from "@x402/core/types";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { getAddress } from "../../chain/rpc/checksum";
import type { CeilingInput } from "../../chain/schemeOps";
import type { AgentSigner } from "../../wallets/provider";
import type { Quote } from "../../x402/pick";
import { schemeSigner } from "./schemeSigner";

export interface SignedCeiling {
  payload: PaymentPayload;
  headers: Record<string, string>;
  paymentId: string;
  /** Exactly what was signed: what authorizeCeiling must authorise before the signature is worth anything. */
  ceiling: CeilingInput;
}

/** The part of the stock upto payload's `permit2Authorization` that a Ceiling is read from. */
export interface Permit2Authorization {
  permitted: { amount: string };
  nonce: string;
  deadline: string;
  witness: { to: string; facilitator: string; validAfter: string };
}

/** The Ceiling the operator authorises for a signed Permit2 witness transfer: exactly what it lets the proxy move. */
export function ceilingOf(a: Permit2Authorization): CeilingInput {
  return {
    payTo: getAddress(a.witness.to),
    facilitator: getAddress(a.witness.facilitator),
    amount: BigInt(a.permitted.amount),
    nonce: BigInt(a.nonce),
    deadline: BigInt(a.deadline),
    validAfter: BigInt(a.witness.validAfter),
  };
}

/** The requirement with the seller's validity capped at `maxValiditySeconds`. */
export function cappedRequirement(quote: Quote, maxValiditySeconds: number) {
  const raw: unknown = quote.requirement.maxTimeoutSeconds;
  const asked = Number(raw);
  const validity = Number.isSafeInteger(asked) && asked > 0 ? Math.min(asked, maxValiditySeconds) : maxValiditySeconds;
  return { ...quote.requirement, maxTimeoutSeconds: validity };
}

/** Signs `quote` (an upto requirement) as ceiling `paymentId` of the wallet at `wallet`. */
export async function signCeiling(
  wallet: string,
  key: AgentSigner,
  paymentId: string,
  quote: Quote,
  maxValiditySeconds: number,
): Promise<SignedCeiling> {
  const client = new x402Client();
  client.register(quote.requirement.network, new UptoEvmScheme(schemeSigner(wallet, key, paymentId)));
  client.setSpendControls(false); // the on-chain policy is the spend control
  const http = new x402HTTPClient(client);
  const payload = await http.createPaymentPayload({ ...quote.paymentRequired, accepts: [cappedRequirement(quote, maxValiditySeconds)] });
  (payload as { accepted?: unknown }).accepted = quote.requirement;
  const a = (payload.payload as { permit2Authorization?: Permit2Authorization }).permit2Authorization;
  if (!a?.witness || !a.permitted) throw new Error("the upto client produced a payload without a Permit2 authorisation");
  const ceiling = ceilingOf(a);
  if (ceiling.amount !== quote.amount) throw new Error("the upto client signed another ceiling than quoted");
  if (ceiling.payTo.toLowerCase() !== quote.requirement.payTo.toLowerCase())
    throw new Error("the upto client signed another payee than quoted");
  return { payload, headers: http.encodePaymentSignatureHeader(payload), paymentId, ceiling };
}
