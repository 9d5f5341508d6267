/**
 * The release step: finishing a payment that did not (visibly) settle from what the chain says. An authorised payment
 * is released (the authorisation dies, the budget comes back) unless USDC used its nonce, which means it settled; a
 * payment whose authorisation was never seen mined is voided first, so no authorisation of it can land any more.
 */
import { upstreamError } from "../errors";
import { PaymentState } from "../chain/reasons";
import type { PaymentDoc } from "../store/documents";
import { type Room, finish } from "./context";
import { transferOf } from "./outcomes";
import { IN_FLIGHT } from "./phases";

const VOIDED_DETAIL = "voided on-chain after an interruption: its authorisation had not landed, and now never can; nothing was paid";

/**
 * After authorisation, when the payment did not (visibly) settle: release it on-chain, which kills the
 * authorisation for good (the wallet refuses its digest from then on) and gives the budget back. The contract
 * refuses the release once USDC has used the nonce: then it settled, and the payment is approved after all.
 */
export async function release(
  room: Room,
  txnId: string,
  detail: string,
): Promise<{ state: "settled" | "released"; txHash: string | null }> {
  const { ctx, ops } = room;
  const doc = await ctx.store.payments.findOne({ txnId });
  if (!doc?.paymentId) throw new Error(`payment ${txnId} has no paymentId`);
  const { agentAddress: agent, paymentId } = doc;
  let releaseTx: string | null = null;
  let settled = false;
  if ((await ops.paymentState(doc.policyAddress, paymentId)) === PaymentState.Authorized) {
    try {
      const r = await ops.release(doc.policyAddress, paymentId, transferOf(doc));
      if (r.settled) settled = true;
      else {
        releaseTx = r.txHash;
        await ctx.gas.charge(doc.ownerAddress, r.receipt);
      }
    } catch (err) {
      ctx.logger.warn({ err, txnId }, "releasePayment failed; reading the outcome from chain");
      if (!(await ops.authorizationUsed(agent, paymentId))) {
        // Neither settled nor released: leave it in flight (lease kept) for the recovery sweep to finish.
        throw upstreamError(
          "The payment could not be finished yet; it stays reserved and is resolved automatically. Do not retry; check the ledger.",
        );
      }
      settled = true;
    }
  } else {
    // Not authorised any more (released before an interruption) or never: only a settlement could have used it.
    settled = await ops.authorizationUsed(agent, paymentId);
  }
  if (settled) {
    const txHash = await ops.settlementTx(agent, paymentId, doc.authorizeBlock ?? 0);
    await finish(room, txnId, IN_FLIGHT, { status: "approved", txHash, settledAt: new Date(), detail });
    return { state: "settled", txHash };
  }
  // A refused payment whose stray authorisation is released here keeps its "blocked" answer.
  const refusedBefore = doc.status === "blocked";
  await finish(room, txnId, IN_FLIGHT, {
    status: refusedBefore ? "blocked" : "failed",
    reason: refusedBefore ? doc.reason : "settlement_failed",
    detail: refusedBefore ? (doc.detail ?? null) : detail,
    releaseTxHash: releaseTx ?? doc.releaseTxHash ?? null,
  });
  return { state: "released", txHash: null };
}

/**
 * Voids the paymentId of a payment whose authorisation was never seen mined: an interrupted run may or may not have
 * sent it, and a stalled one may still send it. Once the void lands no authorisation of it can, so the payment is
 * failed here, at once (nothing was paid, nothing counted). "recorded": the paymentId had a record already (an
 * authorisation landed first, or an earlier void): release() decides from it. "unavailable": no void could be
 * sent (a policy implementation from before it, or the node): the caller falls back to what it did without one.
 */
export async function voidUnsent(room: Room, doc: PaymentDoc & { paymentId: string }): Promise<"voided" | "recorded" | "unavailable"> {
  const { ctx, ops } = room;
  let r;
  try {
    r = await ops.voidUnrecorded(doc.policyAddress, doc.paymentId);
  } catch (err) {
    ctx.logger.warn({ err, txnId: doc.txnId }, "voidUnrecordedPayment failed");
    return "unavailable";
  }
  await ctx.gas.charge(doc.ownerAddress, r.receipt);
  if (r.voided) {
    // A refused payment keeps its "blocked" answer.
    const refusedBefore = doc.status === "blocked";
    await finish(room, doc.txnId, IN_FLIGHT, {
      status: refusedBefore ? "blocked" : "failed",
      reason: refusedBefore ? doc.reason : "not_authorized",
      detail: refusedBefore ? (doc.detail ?? null) : VOIDED_DETAIL,
      voidTxHash: r.txHash,
    });
    return "voided";
  }
  const state = await ops.paymentState(doc.policyAddress, doc.paymentId);
  return state === PaymentState.None ? "unavailable" : "recorded";
}

/**
 * Whether the chain is past the payment's validBefore: no authorisation of its transfer can land any more (the
 * contract refuses an expired transfer), so a run that stalled before authorising can no longer pay it. The block is
 * read before the payment's state is: an authorisation that landed in time is then seen (release).
 *
 * Judged by the later of the latest block's time and the pending block's, the time the node would give the next
 * block: a chain that mines only on transactions (the embedded one, a quiet devnet) makes no block once traffic stops,
 * and by the latest block alone its clock would stand still and the payment wait for good. Nodes that do not build a
 * pending block answer it with the latest (op-geth without --rollup.computependingblock, as Base's RPC nodes run), or
 * with nothing usable; then the latest block decides, as before.
 */
export async function pastValidity(room: Room, doc: Pick<PaymentDoc, "validBefore">): Promise<boolean> {
  if (doc.validBefore == null) return true;
  const provider = room.ctx.chain.provider;
  const [latest, pending] = await Promise.all([
    provider.getBlock("latest"),
    provider.send("eth_getBlockByNumber", ["pending", false]).then(blockTime, () => null),
  ]);
  const now = Math.max(latest?.timestamp ?? 0, pending ?? 0);
  return now >= doc.validBefore;
}

/** A raw block's timestamp (ethers cannot format a pending block: its number is null), or null. */
function blockTime(raw: unknown): number | null {
  const t = (raw as { timestamp?: unknown } | null)?.timestamp;
  if (typeof t !== "string" || !/^0x[0-9a-f]+$/i.test(t)) return null;
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : null;
}
