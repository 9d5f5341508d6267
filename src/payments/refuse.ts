/**
 * A refused payment's record: policy reasons are recorded on-chain (PaymentBlocked, at the operator's cost, capped
 * per agent and hour), the caller's own ceiling and an unsupported quote are not. An identical refusal within 60 s is
 * answered from the first record (gas). Every attempt gets its own ledger entry, finished at once.
 */
import { randomBytes } from "node:crypto";
import { BLOCKED_RECORD_PAY_TO, type TransferInput } from "../chain/policyOps";
import type { ReasonName } from "../chain/reasons";
import { ANY_PAYEE, type AllowlistProof } from "../policy/allowlist";
import type { PayBlocked } from "../schemas/payments";
import type { PaymentDoc } from "../store/documents";
import { alertPaymentDone } from "../services/alerts";
import { type PaymentContext, type Room, ledgerBase, stillLocked } from "./context";
import { blockMessage, blockedOutcome, newTxnId } from "./outcomes";
import { ledgerEntry } from "./phases";
import type { Blocked } from "./result";

const BLOCK_DEDUPE_MS = 60_000;

/** A refused payment, as refuse() records it. */
export interface Refusal {
  amount: bigint;
  /** A refusal before the seller named a price: `amount` is the caller's maxAmount. */
  amountIs?: "maxAmount";
  /** A reason of the table (src/chain/reasons.ts); "blocked" when the contract blocked without naming one. */
  reason: ReasonName | "blocked";
  /** The allowlist proof for the on-chain record (PaymentBlocked); null for a refusal not recorded on-chain. */
  proof: AllowlistProof | null;
  /** An approved payment refused after all: its approval and the ledger entry it already has. */
  approvalId?: string | null;
  txnId?: string;
  detail?: string;
  /** The seller's payTo, when a quote named one: what the on-chain record pays (a refusal never settles anyway). */
  payTo?: string;
}

/** Records refusal `refusal` of payment `pc` (on-chain when its reason is the policy's) and answers it. */
export async function refuse(room: Room, pc: PaymentContext, refusal: Refusal): Promise<Blocked> {
  const { ctx } = room;
  const { amount, reason, proof, approvalId = null, txnId, detail } = refusal;
  const since = new Date(Date.now() - BLOCK_DEDUPE_MS);
  // Only an identical refusal (same merchant, amount, reason, and payee for a payee refusal) shares an on-chain
  // record: an entry never points at a PaymentBlocked of another amount, which an audit of the ledger would flag.
  const sameRefusal = {
    agentAddress: pc.agent.address,
    merchant: pc.merchant,
    amount: amount.toString(),
    reason,
    status: "blocked" as const,
    ...(reason === "payee_not_allowed" ? { refusedPayTo: refusal.payTo ?? null } : {}),
  };
  const previous = txnId
    ? null
    : await ctx.store.payments.findOne({ ...sameRefusal, createdAt: { $gte: since } }, { sort: { createdAt: -1 } });
  const record: OnchainRecord = previous
    ? // Every attempt gets its own ledger entry; only the on-chain record is shared with the first one.
      { txHash: previous.txHash, blockNumber: previous.onchain.blockNumber, reason, capped: null, stray: null }
    : proof
      ? await recordOnchain(room, pc, refusal, proof)
      : { txHash: null, blockNumber: null, reason, capped: null, stray: null };
  const { stray, capped } = record;
  const doc = ledgerEntry(txnId ?? newTxnId(), ledgerBase(pc, approvalId), {
    amount: amount.toString(),
    status: "blocked",
    phase: stray ? "authorized" : "done",
    reason: record.reason,
    paymentId: stray?.paymentId ?? null,
    ...(stray ? { leaseUntil: new Date(0) } : {}),
    txHash: record.txHash,
    authorizeTxHash: record.txHash,
    // Kept for a stray authorisation, which recovery releases with these exact fields.
    payTo: stray ? stray.transfer.payTo : null,
    validAfter: stray ? 0 : null,
    validBefore: stray ? Number(stray.transfer.validBefore) : null,
    onchain: { confirmed: previous?.onchain.confirmed ?? false, blockNumber: record.blockNumber },
    ...(capped ? { detail: `not recorded on-chain: ${capped}` } : detail ? { detail } : {}),
    ...(refusal.amountIs ? { amountIs: refusal.amountIs } : {}),
    ...(record.reason === "payee_not_allowed" && refusal.payTo ? { refusedPayTo: refusal.payTo, pinnedPayee: proof?.payee ?? null } : {}),
    ...(previous ? { duplicateOf: previous.txnId } : {}),
  });
  // An approved payment refused after all completes the entry its approval already has.
  if (txnId) await room.ledger.rewrite(doc, "quoted");
  else await room.ledger.insert(doc);
  ctx.telemetry.annotate(doc.txnId, doc.paymentId);
  // A rewritten entry keeps its first createdAt: the alert reads it as stored.
  ctx.webhooks.later(() => alertPaymentDone(ctx, doc.txnId, txnId ? undefined : doc));
  return { kind: "blocked", outcome: blockedAnswer(doc, previous !== null) };
}

interface OnchainRecord {
  txHash: string | null;
  blockNumber: number | null;
  /** The contract's own reason when it names one. */
  reason: string;
  /** Why the refusal was not recorded on-chain, if it was not. */
  capped: string | null;
  /** A record authorised on-chain whose release failed: the entry keeps what recovery needs to release it. */
  stray: { paymentId: string; transfer: TransferInput } | null;
}

/** PaymentBlocked for the refusal, unless the agent's hourly cap or the owner's gas allowance is spent. */
async function recordOnchain(room: Room, pc: PaymentContext, refusal: Refusal, proof: AllowlistProof): Promise<OnchainRecord> {
  const { ctx, ops } = room;
  const none = (capped: string): OnchainRecord => ({ txHash: null, blockNumber: null, reason: refusal.reason, capped, stray: null });
  if ((await onchainBlocksLeft(room, pc.agent.address)) <= 0)
    return none(`more than ${ctx.config.blockedOnchainPerHour} blocked attempts this hour`);
  const gasLeft = await ctx.gas.check(pc.agent.ownerAddress).then(
    () => true,
    () => false,
  );
  if (!gasLeft) return none("the owner's operator gas allowance for today is spent");
  const paymentId = "0x" + randomBytes(32).toString("hex");
  // The record pays the seller's payTo when a quote named one (so the contract judges the payee as it would the
  // payment), else the leaf's payee, else nobody: nothing may ever settle it (it is not authorised anyway, and a
  // record authorised after all is released below at once).
  const payTo = refusal.payTo ?? (proof.payee !== ANY_PAYEE ? proof.payee : BLOCKED_RECORD_PAY_TO);
  const transfer = { payTo, amount: refusal.amount, validAfter: 0n, validBefore: BigInt(Math.floor(Date.now() / 1000) + 300) };
  // The hourly cap and the identical refusal were read under the agent's lock: still this run's before the record goes.
  await stillLocked(pc, paymentId);
  let result;
  try {
    result = await ctx.telemetry.step("authorize", () => ops.authorize(pc.agent.policyAddress, paymentId, pc.merchant, proof, transfer));
  } catch (err) {
    // Refused all the same (a reverted record: the owner set another operator on-chain, say). Whether anything
    // landed is the chain's to say: the entry keeps the paymentId, and recovery releases a record that did.
    ctx.logger.error({ err, agent: pc.agent.address }, "the on-chain record of a refusal failed");
    await ctx.gas.charge(pc.agent.ownerAddress, await ctx.chain.receiptOfFailure(err));
    return { ...none("its transaction failed"), stray: { paymentId, transfer } };
  }
  await ctx.gas.charge(pc.agent.ownerAddress, result.receipt);
  let stray: OnchainRecord["stray"] = null;
  if (result.authorized) {
    // The policy changed between simulation and transaction: never keep budget for a payment not made.
    await ctx.telemetry
      .step("release", () => ops.release(pc.agent.policyAddress, paymentId, transfer))
      .catch((err: unknown) => {
        // Left to the recovery sweep, which releases it (the entry records the paymentId).
        ctx.logger.error({ err, paymentId }, "release of a stray authorisation failed");
        stray = { paymentId, transfer };
      });
  }
  return {
    txHash: result.txHash,
    blockNumber: result.blockNumber,
    reason: result.authorized ? refusal.reason : (result.reason ?? refusal.reason),
    capped: null,
    stray,
  };
}

/**
 * Blocked attempts are written on-chain at the operator's cost: a runaway agent gets BLOCKED_ONCHAIN_PER_HOUR of
 * them, then its refusals are kept in the ledger only.
 */
async function onchainBlocksLeft(room: Room, agentAddress: string): Promise<number> {
  const hourAgo = new Date(Date.now() - 3_600_000);
  const used = await room.ctx.store.payments.countDocuments({
    agentAddress,
    status: "blocked",
    // An attempt whose record failed (kept with its paymentId) cost the operator gas too.
    $or: [{ txHash: { $ne: null } }, { paymentId: { $ne: null } }],
    duplicateOf: { $exists: false },
    createdAt: { $gte: hourAgo },
  });
  return room.ctx.config.blockedOnchainPerHour - used;
}

/** A refusal's answer, from its entry. */
function blockedAnswer(doc: PaymentDoc, replayed: boolean): PayBlocked {
  const reason = doc.reason ?? "blocked";
  return blockedOutcome({
    reason,
    txHash: doc.txHash,
    amount: doc.amount,
    merchant: doc.merchant,
    intent: doc.intent,
    transactionId: doc.txnId,
    ...(doc.refusedPayTo ? { payTo: doc.refusedPayTo, ...(doc.pinnedPayee ? { pinnedPayee: doc.pinnedPayee } : {}) } : {}),
    message:
      blockMessage(reason) +
      (doc.refusedPayTo
        ? ` (the seller asks to be paid at ${doc.refusedPayTo}; the owner named ${doc.pinnedPayee ?? "another payee"})`
        : "") +
      ((doc.reason === "insufficient_funds" || doc.reason === "unsupported_payment") && doc.detail ? ` (${doc.detail})` : "") +
      (replayed ? " (the same refusal as moments ago: recorded on-chain once)" : ""),
  });
}
