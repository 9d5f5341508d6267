/**
 * An owner-approved payment, composed of the same steps as POST /pay: quote again (the price and payee the owner
 * signed must still hold), decide (fresh from the chain), then refuse, swap and execute with the owner's approval
 * carried on-chain. Also the two ends of a payment waiting for its owner that are not payments: denied and expired.
 */
import { fromBaseUnits } from "../amounts";
import { appError, conflict, notFound } from "../errors";
import type { ApprovalDecisionRequest, PayApproved } from "../schemas/payments";
import type { ApprovalDoc } from "../store/documents";
import type { Fence } from "../store/leases";
import { type PaymentContext, type Room, ledgerBase } from "./context";
import { execute } from "./execute";
import { signedOfferDetail, swapStep } from "./pay";
import { quote } from "./quote";
import { awaitQuiet } from "./recover";
import { refuse } from "./refuse";
import { type PaymentResult, refused } from "./result";

/** The approval's answer once its payment settled. */
export interface ApprovedAnswer {
  id: string;
  status: "approved";
  txHash: string | null;
  amount: string;
  merchant: string;
  settledAt: string;
  transactionId: string;
  response: { status: number; body: unknown };
  swap?: PayApproved["swap"];
}

/**
 * Carries out approval `approvalId` (its owner's signature `digest` verified, not yet used up: `consume` uses it up
 * right before anything is sent). Under the agent's lock; exactly one of concurrent approvals (or an approve racing a
 * deny) proceeds. The approval follows its payment.
 */
export async function approve(
  room: Room,
  first: ApprovalDoc,
  input: ApprovalDecisionRequest,
  consume: () => Promise<void>,
): Promise<ApprovedAnswer> {
  const { store } = room.ctx;
  const approvalId = first.approvalId;
  return room.ctx.agentLock.run(first.agentAddress, async (lock) => {
    if (lock.tookOver) await awaitQuiet(room, first.agentAddress);
    // Claim it: of two concurrent approvals (or an approve racing a deny) exactly one proceeds.
    const a = await store.approvals.findOneAndUpdate(
      { approvalId, status: "pending" },
      { $set: { status: "approving" } },
      { returnDocument: "after" },
    );
    if (!a) throw conflict(`Approval ${approvalId} was resolved meanwhile.`);
    const t = room.ctx.telemetry;
    const b = await t.payment(a.agentAddress, "approval", () => t.approval(() => carryOut(room, a, input, lock, consume)));
    await store.approvals.updateOne({ approvalId }, { $set: { status: "approved", resolvedAt: new Date() } });
    return {
      id: approvalId,
      status: "approved" as const,
      txHash: b.txHash,
      amount: b.amount,
      merchant: b.merchant,
      settledAt: b.settledAt,
      transactionId: a.txnId,
      response: b.response,
      ...(b.swap ? { swap: b.swap } : {}),
    };
  });
}

/** Pays approval `a` (claimed: "approving"); throws what the owner is told when it does not settle. */
async function carryOut(
  room: Room,
  a: ApprovalDoc,
  input: ApprovalDecisionRequest,
  lock: Fence,
  consume: () => Promise<void>,
): Promise<PayApproved> {
  let result: PaymentResult;
  try {
    result = await payApproved(room, a, input, lock, consume);
  } catch (err) {
    await followPayment(room, a);
    throw err;
  }
  if (result.kind === "refused") {
    await followPayment(room, a);
    throw result.error;
  }
  if (result.kind !== "approved") {
    await room.ctx.store.approvals.updateOne({ approvalId: a.approvalId }, { $set: { status: "failed", resolvedAt: new Date() } });
    const reason = result.kind === "blocked" ? result.outcome.reason : result.kind;
    throw appError("blocked", `The approved payment was blocked on-chain: ${reason}.`, { details: result.outcome });
  }
  return result.outcome;
}

/**
 * The approval follows its payment after a refusal or a failure: nothing authorised yet (a seller or facilitator
 * outage, a price change) -> pending again, for the owner to retry or deny; otherwise the payment's outcome.
 */
async function followPayment(room: Room, a: ApprovalDoc): Promise<void> {
  const { store } = room.ctx;
  const payment = await store.payments.findOne({ txnId: a.txnId });
  const next =
    !payment || payment.status === "pending"
      ? "pending"
      : payment.status === "approved"
        ? "approved"
        : payment.status === "processing"
          ? "approving"
          : "failed";
  if (next === "approving") return;
  await store.approvals.updateOne(
    { approvalId: a.approvalId, status: "approving" },
    { $set: { status: next, resolvedAt: next === "pending" ? null : new Date() } },
  );
}

async function payApproved(
  room: Room,
  a: ApprovalDoc,
  input: ApprovalDecisionRequest,
  lock: Fence,
  consume: () => Promise<void>,
): Promise<PaymentResult> {
  const agent = await room.ctx.store.agents.findOne({ address: a.agentAddress });
  if (!agent) return refused(notFound(`Agent ${a.agentAddress} of approval ${a.approvalId} is unknown.`));
  const pc: PaymentContext = {
    agent,
    merchant: a.merchant,
    serviceUrl: a.serviceUrl,
    intent: a.intent,
    seller: { url: a.serviceUrl, method: a.method, body: typeof a.requestBody === "string" ? JSON.parse(a.requestBody) : a.requestBody },
  };
  const { step } = room.ctx.telemetry;
  room.ctx.telemetry.annotate(a.txnId);
  const quoted = await step("quote", () => quote(room, pc));
  if (quoted.kind === "refused") return quoted;
  const q = quoted.quote;
  if (!q) return refused(appError("unsupported_payment", "The seller no longer offers an exact USDC payment on this chain."));
  if (q.amount > BigInt(a.amount)) {
    return refused(
      appError(
        "price_changed",
        `The seller's price rose from ${fromBaseUnits(a.amount)} to ${fromBaseUnits(q.amount)} USDC; the approval stays pending. Deny it, or let the agent ask again.`,
        { details: { approvedAmount: fromBaseUnits(a.amount), newAmount: fromBaseUnits(q.amount) } },
      ),
    );
  }
  // The owner signed the payee too: a seller that moved its payTo since is refused here, before anything is sent.
  if (a.payTo && q.requirement.payTo.toLowerCase() !== a.payTo.toLowerCase()) {
    return refused(
      appError(
        "payee_changed",
        `The seller now asks to be paid at ${q.requirement.payTo}, not ${a.payTo} as the owner approved; the approval stays pending. Deny it, or let the agent ask again.`,
        { details: { approvedPayTo: a.payTo, newPayTo: q.requirement.payTo } },
      ),
    );
  }
  // The owner approved this amount: a decision that requires approval goes on, with the approval, to the chain.
  // Read first: a refusal here (no policy, an operator the owner moved away) sends nothing and leaves the owner's
  // signature usable, like a price rise. It is used up before anything is sent.
  const decision = await step("decide", () => room.decisions.evaluate(agent, a.merchant, q.amount, q.requirement.payTo));
  await consume();
  const approval = { approvalId: a.approvalId, txnId: a.txnId };
  if (decision.status === "block")
    return refuse(room, pc, { amount: q.amount, reason: decision.reason, proof: decision.proof, ...approval });
  if (!quoted.offers.offers.length && (await room.decisions.requiresSignedOffer(agent, decision))) {
    const detail = signedOfferDetail(quoted.offers.sent);
    return refuse(room, pc, { amount: q.amount, reason: "signed_offer_required", proof: null, detail, ...approval });
  }
  const swap = await swapStep(room, pc, decision.swap, q.amount, approval);
  if ("kind" in swap) return swap;
  return execute(room, {
    ...swap,
    txnId: a.txnId,
    base: { ...ledgerBase(pc, a.approvalId), createdAt: a.requestedAt },
    seller: pc.seller,
    quote: q,
    proof: decision.proof,
    dailyBudget: decision.policy.dailyBudget,
    agent,
    fences: [lock],
    approval: { approvalId: a.approvalId, amount: BigInt(a.amount), timestamp: input.timestamp, signature: input.humanSignature },
  });
}

/** A payment that waited for its owner ends without paying: denied by the owner, or expired. Whether it was waiting. */
export async function closeWaiting(room: Room, txnId: string, status: "denied" | "expired", at: Date): Promise<boolean> {
  const reason = status === "denied" ? "denied_by_owner" : "approval_expired";
  return (await room.ledger.finish(txnId, ["quoted"], { status, reason, updatedAt: at })) !== null;
}
