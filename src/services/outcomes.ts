/** What a payment's ledger entry says once it is done: its answer under an Idempotency-Key, and its transfer. */
import { randomBytes } from "node:crypto";
import { fromBaseUnits } from "../amounts";
import type { TransferInput } from "../chain/policyOps";
import { reasonRow } from "../chain/reasons";
import { errorBody, upstreamError } from "../errors";
import type { PaymentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import { swapView } from "./presenters";

/**
 * The answer a finished payment gives under its Idempotency-Key when its own request could not (an interruption, an
 * unexpected error): read from the ledger entry, which recovery decided from the chain.
 */
export async function outcomeOf(ctx: ServiceContext, p: PaymentDoc): Promise<{ status: number; body: unknown } | null> {
  if (p.phase !== "done") return null;
  if (p.status === "approved") {
    const remaining = await ctx.chain
      .policyAt(p.policyAddress, ctx.chain.provider)
      .remainingDailyBudget()
      .catch(() => null);
    return {
      status: 200,
      body: {
        status: "approved",
        txHash: p.txHash,
        amount: fromBaseUnits(p.amount),
        currency: "USDC",
        merchant: p.merchant,
        ...(remaining !== null ? { remainingDailyBudget: fromBaseUnits(remaining) } : {}),
        settledAt: (p.settledAt ?? p.updatedAt).toISOString(),
        intent: p.intent,
        transactionId: p.txnId,
        paymentId: p.paymentId,
        authorizeTxHash: p.authorizeTxHash,
        ...(p.swap ? { swap: swapView(p.swap) } : {}),
        message:
          "Paid and settled. This answer was read from the chain after the request was interrupted; the seller's response is not available.",
        response: { status: 0, body: null },
      },
    };
  }
  if (p.status === "failed") {
    const e = upstreamError("The payment did not settle: its authorisation was released on-chain and nothing was paid.", {
      reason: p.reason,
    });
    return { status: e.status, body: errorBody(e) };
  }
  return null;
}

/** The transfer a payment authorised, as its ledger entry recorded it (recovery releases with it). */
export function transferOf(doc: PaymentDoc): TransferInput {
  if (!doc.payTo || doc.validBefore == null) throw new Error(`payment ${doc.txnId} has no recorded transfer`);
  return { payTo: doc.payTo, amount: BigInt(doc.amount), validAfter: BigInt(doc.validAfter ?? 0), validBefore: BigInt(doc.validBefore) };
}

export const newTxnId = () => `txn_${randomBytes(12).toString("hex")}`;
export const newApprovalId = () => `apr_${randomBytes(12).toString("hex")}`;

/** What an agent is told of a refusal (the reason table's message). */
export function blockMessage(reason: string): string {
  return `${reasonRow(reason)?.message ?? "The payment was refused."} Do not retry; report the reason to the owner.`;
}
