/**
 * A payment above the owner's approval threshold: an approval request (and its ledger entry, "quoted") that waits for
 * the owner's signed decision (approve.ts). Nothing is signed or sent.
 */
import { fromBaseUnits } from "../amounts";
import { LeaseLostError, appError, transient } from "../errors";
import type { ApprovalDoc } from "../store/documents";
import { followAgentOwner } from "../store/owners";
import type { Quote } from "../x402/buyer";
import { alertApproval } from "../services/alerts";
import { type PaymentContext, type Room, ledgerBase } from "./context";
import { newApprovalId, newTxnId } from "./outcomes";
import { ledgerEntry } from "./phases";
import { type Pending, type Refused, refused } from "./result";

/** Retry-After of a payment refused because too many of the agent's wait for its owner. */
const PENDING_RETRY_S = 60;
/** Pending approvals one agent may have at a time (a stolen agent key must not bury its owner's queue). */
export const MAX_PENDING_APPROVALS = 20;

export async function requestApproval(room: Room, pc: PaymentContext, quote: Quote, maxAmount: bigint): Promise<Pending | Refused> {
  const { ctx } = room;
  const approvalId = newApprovalId();
  const txnId = newTxnId();
  ctx.telemetry.annotate(txnId);
  const now = new Date();
  // Counted under the agent's lock (payments of one agent are serialised across instances), whose fence is checked once
  // the request is written (below): the cap holds.
  const open = await ctx.store.approvals.countDocuments({
    agentAddress: pc.agent.address,
    $or: [{ status: "pending", expiresAt: { $gt: now } }, { status: "approving" }],
  });
  if (open >= MAX_PENDING_APPROVALS) {
    const wait = `${open} payments of this agent already wait for its owner (at most ${MAX_PENDING_APPROVALS}); nothing was paid or recorded`;
    return refused(
      transient(appError("too_many_pending_approvals", `${wait}. Wait until the owner decides them or they expire.`), PENDING_RETRY_S),
    );
  }
  const expiresAt = new Date(now.getTime() + ctx.config.approvalTtlSeconds * 1000);
  // An approval is a payment to come: committed to its key first, so a stalled run never leaves a second one.
  const key = pc.fences?.key;
  if (key && !(await key.hold(txnId))) throw new LeaseLostError();
  const approval: ApprovalDoc = {
    approvalId,
    txnId,
    agentAddress: pc.agent.address,
    ownerAddress: pc.agent.ownerAddress,
    merchant: pc.merchant,
    serviceUrl: pc.serviceUrl,
    method: pc.seller.method,
    // As JSON text: any key the agent sends to its seller (a "$where", a dotted name) is storable that way.
    requestBody: pc.seller.body === undefined ? undefined : JSON.stringify(pc.seller.body),
    amount: quote.amount.toString(),
    payTo: quote.requirement.payTo,
    maxAmount: maxAmount.toString(),
    intent: pc.intent,
    status: "pending",
    requestedAt: now,
    resolvedAt: null,
    expiresAt,
  };
  await ctx.store.approvals.insertOne(approval).catch(async (err: unknown) => {
    await key?.letGo?.(txnId).catch(() => undefined);
    throw err;
  });
  await room.ledger.insert(
    ledgerEntry(
      txnId,
      ledgerBase(pc, approvalId),
      { amount: quote.amount.toString(), status: "pending", phase: "quoted", payTo: quote.requirement.payTo },
      now,
    ),
  );
  // Written, then the lock's fence checked, as a payment's commit (authorize.ts begin): an instance that took the lock
  // over meanwhile either counts this request or finds it undone. Undone only while it still waits untouched: one the
  // owner claimed or decided meanwhile (listed from the moment it was written) stands, and is answered as requested.
  const lock = pc.fences?.lock;
  if (lock && !(await lock.hold(txnId)) && (await ctx.store.approvals.deleteOne({ approvalId, status: "pending" })).deletedCount === 1) {
    await room.ledger.undoRequested(txnId);
    await key?.letGo?.(txnId).catch(() => undefined);
    throw new LeaseLostError();
  }
  approval.ownerAddress = await followAgentOwner(ctx.store, approval);
  ctx.webhooks.later(() => alertApproval(ctx, "approval.requested", approval));
  const amount = fromBaseUnits(quote.amount);
  return {
    kind: "pending",
    outcome: {
      status: "pending",
      approvalId,
      amount,
      merchant: pc.merchant,
      intent: pc.intent,
      transactionId: txnId,
      expiresAt: expiresAt.toISOString(),
      message: `Payment of ${amount} USDC to ${pc.merchant} is above the approval threshold and waits for the owner's approval at ${ctx.urls.dashboard}/approvals. Do not retry; check the ledger for the outcome.`,
    },
  };
}
