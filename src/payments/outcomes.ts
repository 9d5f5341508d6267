/** What a payment's ledger entry says once it is done: its answer under an Idempotency-Key, and its transfer. */
import { randomBytes } from "node:crypto";
import { fromBaseUnits } from "../amounts";
import type { TransferInput } from "../chain/policyOps";
import { reasonRow } from "../chain/reasons";
import { errorBody, upstreamError } from "../errors";
import type { PayAnswer, PayBlocked } from "../schemas/payments";
import type { PaymentDoc } from "../store/documents";
import type { ServiceContext } from "../services/context";
import { swapView } from "../services/presenters";

/**
 * The answer a finished payment gives under its Idempotency-Key when its own request could not (an interruption, an
 * unexpected error): read from the ledger entry, which recovery decided from the chain.
 */
export async function outcomeOf(ctx: ServiceContext, p: PaymentDoc): Promise<PayAnswer | null> {
  if (p.phase !== "done") return null;
  if (p.status === "approved") {
    const remaining = await ctx.chain
      .policyAt(p.policyAddress, ctx.chain.provider)
      .remainingDailyBudget()
      .catch(() => null);
    return {
      outcome: {
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
    const e = upstreamError(failureOf(p), { reason: p.reason, transactionId: p.txnId, ...(p.detail ? { detail: p.detail } : {}) });
    return { error: errorBody(e) };
  }
  return null;
}

/**
 * What happened to a failed payment, as its entry says: never authorised, its authorisation released, a voucher the
 * seller did not count, a deposit held or credited back. Never "nothing was paid" where money moved (a deposit held).
 */
function failureOf(p: PaymentDoc): string {
  if (p.scheme === "batch-settlement") {
    if (!p.channel?.depositPaymentId) return "The seller did not count this request's voucher: nothing was charged for it.";
    return `The request was not served (${p.detail ?? "see the ledger"}).`;
  }
  if (p.scheme === "upto") return "Nothing was settled: the ceiling was closed on-chain and credited back, and nothing was paid.";
  if (p.reason === "not_authorized") return "The payment was never authorised on-chain (its paymentId was voided): nothing was paid.";
  return "The payment did not settle: its authorisation was released on-chain and nothing was paid.";
}

/** The transfer a payment authorised, as its ledger entry recorded it (recovery releases with it). */
export function transferOf(doc: PaymentDoc): TransferInput {
  if (!doc.payTo || doc.validBefore == null) throw new Error(`payment ${doc.txnId} has no recorded transfer`);
  return { payTo: doc.payTo, amount: BigInt(doc.amount), validAfter: BigInt(doc.validAfter ?? 0), validBefore: BigInt(doc.validBefore) };
}

export const newTxnId = () => `txn_${randomBytes(12).toString("hex")}`;
export const newApprovalId = () => `apr_${randomBytes(12).toString("hex")}`;

/** A blocked payment's answer: the one shape, with what the agent is told to do (the reason's message unless given). */
export function blockedOutcome(b: {
  reason: string;
  txHash: string | null;
  amount: bigint | string;
  merchant: string;
  intent: string;
  transactionId: string;
  message?: string;
  payTo?: string;
  pinnedPayee?: string;
}): PayBlocked {
  return {
    status: "blocked",
    reason: b.reason,
    onchainEvent: b.txHash ? "PaymentBlocked" : null,
    txHash: b.txHash,
    amount: fromBaseUnits(b.amount),
    merchant: b.merchant,
    intent: b.intent,
    transactionId: b.transactionId,
    ...(b.payTo ? { payTo: b.payTo } : {}),
    ...(b.pinnedPayee ? { pinnedPayee: b.pinnedPayee } : {}),
    message: b.message ?? blockMessage(b.reason),
  };
}

/** What an agent is told of a refusal (the reason table's message). */
export function blockMessage(reason: string): string {
  return `${reasonRow(reason)?.message ?? "The payment was refused."} Do not retry; report the reason to the owner.`;
}
