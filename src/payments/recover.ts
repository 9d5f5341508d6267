/**
 * The recover step: finishing payments a run left in flight (a crash, a kill, a stall past its lease) from chain
 * state, with the same steps a payment uses (release.ts): settled -> approved; authorised but not settled -> released
 * -> failed; never authorised -> voided -> failed. Then the payment's Idempotency-Key and approval take its outcome.
 */
import { PaymentState } from "../chain/reasons";
import { conflict, transient } from "../errors";
import type { PaymentDoc } from "../store/documents";
import { type Room, lease, note } from "./context";
import { IN_FLIGHT } from "./phases";
import { stillPending } from "./pendingSettlement";
import { pastValidity, release, voidUnsent } from "./release";
import { channelOnchain, resolveChannel } from "./schemes/channelState";
import { recoverVouchers } from "./schemes/vouchers";
import { resolveUpto } from "./schemes/upto";

/** Retry-After of a payment refused because another of its agent's is still in flight elsewhere. */
const IN_FLIGHT_RETRY_S = 5;
/**
 * How soon a payment recovery claimed but could not finish (the chain or the store out of reach, an authorisation
 * still pending) may be tried again: the claim's lease is cut to this, not left at PAYMENT_LEASE_MS, during which
 * nobody would try it and its agent's next payments would wait for it (awaitQuiet) and answer 409.
 */
export const RECOVERY_RETRY_MS = 2_000;

/**
 * Resolves a payment left between authorise and settle from chain state. An authorisation still pending is left for a
 * later sweep. `stale`: the payment is another run's, which may only have stalled (see authorize.ts, begin).
 */
export async function resolveInFlight(room: Room, txnId: string, stale = false): Promise<void> {
  const { ctx, ops } = room;
  const doc = await ctx.store.payments.findOne({ txnId });
  if (!doc || doc.phase === "done" || doc.phase === "quoted" || !doc.paymentId) return;
  // The schemes beyond exact are closed their own way (a ceiling's credit, a channel's voucher).
  if (doc.scheme === "upto") return resolveUpto(room, doc);
  if (doc.scheme === "batch-settlement") return resolveChannel(room, doc);
  let mined = doc.authorizeBlock != null;
  if (doc.authorizeTxHash) {
    const receipt = await ctx.chain.receiptOf(doc.authorizeTxHash, 30_000).catch(() => null);
    if (!receipt && (await ctx.chain.provider.getTransaction(doc.authorizeTxHash).catch(() => null))) return; // still pending
    if (receipt && doc.authorizeBlock == null) await note(room, txnId, doc.phase, { authorizeBlock: receipt.blockNumber });
    mined ||= receipt !== null;
  }
  // A settlement the seller reported pending that may still land: decided once the chain has (a later sweep).
  if (await stillPending(room, doc)) return;
  // Never seen mined: perhaps never sent, perhaps still to come from a stalled run (or a dead one's last send).
  if (!mined) {
    const voided = await voidUnsent(room, doc);
    if (voided === "voided") return;
    if (voided === "unavailable" && stale && !doc.authorizeTxHash && !(await pastValidity(room, doc))) return; // its run may still authorise it
  }
  const wasAuthorized =
    doc.authorizeBlock != null || (await ops.paymentState(doc.policyAddress, doc.paymentId)) === PaymentState.Authorized;
  const outcome = await release(room, txnId, "recovered after an interruption");
  if (outcome.state === "released" && !wasAuthorized && doc.status !== "blocked") {
    // Written on the finished entry: the reason only (its phase stays done).
    await room.ledger.set(txnId, "done", { reason: "not_authorized" });
  }
}

/** An approval whose payment was finished by recovery takes the payment's outcome. */
async function settleApproval(room: Room, txnId: string, approvalId: string): Promise<void> {
  const { store } = room.ctx;
  const payment = await store.payments.findOne({ txnId });
  if (!payment || payment.phase !== "done") return;
  const status = payment.status === "approved" ? "approved" : "failed";
  await store.approvals.updateOne({ approvalId, status: "approving" }, { $set: { status, resolvedAt: new Date() } });
}

/**
 * Finishes payments whose lease ran out (the instance working on them stopped): at start-up and then periodically. A
 * payment another live instance is working on keeps its lease and is left alone. At start-up (`own`), the payments
 * of this instance id are taken at once: the process that held their lease is gone.
 */
export async function recover(room: Room, now = new Date(), opts: { own?: boolean } = {}): Promise<number> {
  const { ctx } = room;
  const dead = ctx.leases.deadHolders();
  const free = [
    { leaseUntil: { $lt: now } },
    { leaseUntil: { $exists: false } },
    ...(opts.own ? [{ instanceId: ctx.instanceId }] : []),
    // An instance whose heartbeat went stale: taken over at once, fenced on-chain first (failover.ts).
    ...(dead.length ? [{ instanceId: { $in: [...dead] } }] : []),
  ];
  // This network's payments only: another network's are finished from its own chain.
  const due = await ctx.store.payments.find({ ...ctx.networkScope, phase: { $in: [...IN_FLIGHT] }, $or: free }).toArray();
  let resolved = 0;
  // All at once: the agent lock serialises one agent's, and a dead instance's payments are final in one round.
  await Promise.all(
    due.map((doc) =>
      ctx.agentLock
        .run(doc.agentAddress, () => finishClaimed(room, doc, !(opts.own && doc.instanceId === ctx.instanceId)))
        .then((claimed) => (resolved += claimed ? 1 : 0))
        .catch((err: unknown) => ctx.logger.error({ err, txnId: doc.txnId }, "could not resolve an interrupted payment")),
    ),
  );
  // Vouchers whose run is gone, in their channels' records: settled from the ledger and the seller's claim on-chain.
  const claimed = async (channelId: string) => (await channelOnchain(room, channelId)).totalClaimed;
  resolved += await recoverVouchers(room, now, opts.own === true, claimed).catch((err: unknown) => {
    ctx.logger.error({ err }, "could not settle interrupted vouchers");
    return 0;
  });
  return resolved;
}

/** Claims `doc`, whose lease ran out, and finishes it; the caller holds its agent's lock. */
async function finishClaimed(room: Room, doc: PaymentDoc, stale: boolean): Promise<boolean> {
  const { ctx } = room;
  // Claim it: of several recovering instances exactly one proceeds.
  if (!(await room.ledger.claim(doc, { leaseUntil: lease(room), instanceId: ctx.instanceId }))) return false;
  try {
    await ctx.telemetry.step("recover", () => resolveInFlight(room, doc.txnId, stale), doc.txnId);
  } finally {
    // Not finished (a dependency failed, or the chain has not decided yet): tried again soon, by any instance.
    await room.ledger.shortenLease(doc.txnId, ctx.instanceId, new Date(Date.now() + RECOVERY_RETRY_MS)).catch(() => undefined);
  }
  if (doc.approvalId) await settleApproval(room, doc.txnId, doc.approvalId);
  const done = await ctx.store.payments.findOne({ txnId: doc.txnId, phase: "done" });
  if (done) await room.idempotency.settleFromPayment(done);
  return true;
}

/**
 * After taking an agent's lock over from an instance that stopped renewing it: that instance may only be stalled,
 * so its payments still in flight are waited for before another begins (see authorize.ts, begin). Those whose lease
 * has run out are finished here, since recovery would wait for the lock this run holds.
 */
export async function awaitQuiet(room: Room, agentAddress: string, waitMs = 120_000): Promise<void> {
  const { ctx } = room;
  // Measured on the lease clock, like the lock it follows (tests move it to play the wait).
  const clock = ctx.leases.clock;
  const deadline = clock() + waitMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1_000)) {
    const busy = await ctx.store.payments.find({ agentAddress, phase: { $in: [...IN_FLIGHT] } }).toArray();
    if (!busy.length) return;
    if (delay === 50)
      ctx.logger.warn({ agentAddress, txnId: busy[0].txnId }, "took an agent's lock over: waiting for its payments in flight");
    const now = Date.now();
    for (const doc of busy.filter((d) => !d.leaseUntil || d.leaseUntil.getTime() < now || ctx.leases.isDead(d.instanceId))) {
      await finishClaimed(room, doc, true).catch((err: unknown) =>
        ctx.logger.error({ err, txnId: doc.txnId }, "could not resolve a payment"),
      );
    }
    if (clock() > deadline) {
      // Transient: the key (if any) is freed, and a retry once that payment is final gets its own outcome.
      throw transient(
        conflict(`A payment of this agent (${busy[0].txnId}) is still in flight on another instance; nothing was paid. Retry later.`),
        IN_FLIGHT_RETRY_S,
      );
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}
