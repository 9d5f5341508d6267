/**
 * An `upto` payment (metered; docs/schemes.md): the wallet signs the seller's price as a ceiling, the policy
 * authorises the ceiling on-chain (authorizeCeiling: counted in full, the wallet approves Permit2 for exactly it), the
 * seller settles what the request used, and the wallet then credits back the part not settled (creditCeiling: the
 * permit dies, the Permit2 allowance goes to 0, the windows get the difference). Every path after the authorisation
 * ends in that credit, so what stays counted is exactly what left the wallet.
 */
import { randomBytes } from "node:crypto";
import { fromBaseUnits } from "../../amounts";
import { interfaceOf } from "../../chain/contracts";
import { AppError, appError, upstreamError } from "../../errors";
import type { AllowlistProof } from "../../policy/allowlist";
import type { PayApproved } from "../../schemas/payments";
import type { PaymentDoc } from "../../store/documents";
import type { SellerRequest } from "../../x402/buyer";
import { readSettlement } from "../../x402/buyer";
import type { Quote } from "../../x402/pick";
import { type SignedCeiling, signCeiling } from "./uptoPayment";
import { authorize, begin, blockedOnchain, markAuthorized } from "../authorize";
import { type PaymentContext, type Room, fencesOf, finish, ledgerBase, stillLocked } from "../context";
import { newTxnId } from "../outcomes";
import { voidUnsent } from "../release";
import { type PaymentResult, refused } from "../result";
import { send } from "../send";

export interface UptoInput {
  quote: Quote;
  proof: AllowlistProof;
  dailyBudget: bigint;
}

/** Pays `pc` with an upto ceiling of `quote.amount`; the caller holds the agent's lock and the policy allowed it. */
export async function payUpto(room: Room, pc: PaymentContext, input: UptoInput): Promise<PaymentResult> {
  const { ctx } = room;
  const { quote } = input;
  try {
    await ctx.gas.check(pc.agent.ownerAddress);
  } catch (err) {
    if (err instanceof AppError) return refused(err);
    throw err;
  }
  // A ceiling a crash left open would make the wallet refuse this one: finished first (its entry by recovery).
  const open = await room.schemes.openCeiling(pc.agent.address);
  if (!/^0x0{64}$/.test(open)) {
    // Only while the lock is still this run's: otherwise the open ceiling may be another instance's payment in flight.
    await stillLocked(pc, open);
    const left = await ctx.store.payments.findOne({ agentAddress: pc.agent.address, paymentId: open });
    if (left && left.phase !== "done") await resolveUpto(room, left);
    else await room.schemes.creditCeiling(pc.agent.address, open);
  }
  const paymentId = `0x${randomBytes(32).toString("hex")}`;
  let signed: SignedCeiling;
  try {
    const key = await ctx.wallets.signer(pc.agent.signerAddress);
    signed = await ctx.telemetry.step("sign", () =>
      signCeiling(pc.agent.address, key, paymentId, quote, ctx.config.maxPaymentValiditySeconds),
    );
  } catch (err) {
    return refused(
      appError("unsupported_payment", `The seller's upto requirement could not be signed (${(err as Error).message}); nothing was paid.`),
    );
  }
  const txnId = newTxnId();
  const base = ledgerBase(pc, null);
  const c = signed.ceiling;
  const transfer = { payTo: c.payTo, amount: c.amount, validAfter: c.validAfter, validBefore: c.deadline };
  await begin(room, {
    txnId,
    base,
    amount: c.amount,
    signed: { nonce: paymentId, transfer },
    fences: fencesOf(pc),
    extra: { scheme: "upto", ceiling: c.amount.toString(), creditTxHash: null },
  });
  const sentOff = await authorize(room, {
    txnId,
    base,
    signed: { nonce: paymentId, transfer },
    proof: input.proof,
    call: (onSent) => room.schemes.authorizeCeiling(pc.agent.address, paymentId, pc.merchant, input.proof, c, undefined, onSent),
  });
  if (sentOff.kind === "failed") {
    const doc = await ctx.store.payments.findOne({ txnId });
    if (doc) await resolveUpto(room, doc).catch(() => undefined);
    return refused(sentOff.error);
  }
  const { result } = sentOff;
  await ctx.gas.charge(base.ownerAddress, result.receipt);
  if (!result.authorized) return blockedOnchain(room, { txnId, base, amount: c.amount, result });
  await markAuthorized(room, txnId, result);
  const answered = await sendCeiling(room, pc.seller, signed);
  // Whatever the seller did, the ceiling is closed now: what it settled stays counted, the rest comes back.
  const closed = await closeCeiling(room, txnId, answered.detail, answered.settlementTx);
  if (closed.settled === 0n) {
    return refused(
      upstreamError(
        `The seller settled nothing of the ${fromBaseUnits(c.amount)} USDC ceiling (${answered.detail}). The ceiling was closed on-chain; nothing was paid.`,
        {
          reason: answered.detail.slice(0, 200),
          ...(answered.res ? { sellerStatus: answered.res.status } : {}),
        },
      ),
    );
  }
  const outcome: PayApproved = {
    status: "approved",
    txHash: closed.settlementTx,
    amount: fromBaseUnits(closed.settled),
    currency: "USDC",
    merchant: base.merchant,
    remainingDailyBudget: fromBaseUnits(input.dailyBudget > closed.spentToday ? input.dailyBudget - closed.spentToday : 0n),
    settledAt: new Date().toISOString(),
    intent: base.intent,
    transactionId: txnId,
    paymentId,
    authorizeTxHash: result.txHash,
    scheme: "upto",
    ceiling: fromBaseUnits(c.amount),
    response: answered.res ?? { status: 0, body: null },
    ...(answered.res ? {} : { message: `The seller's answer was lost (${answered.detail}) after it settled.` }),
  };
  return { kind: "approved", outcome };
}

/** The paid request, and what the seller said of its settlement (for the ledger). */
async function sendCeiling(
  room: Room,
  seller: SellerRequest,
  signed: SignedCeiling,
): Promise<{ res: { status: number; body: unknown } | null; settlementTx: string | null; detail: string }> {
  const sent = await send(room, seller, signed);
  if (sent.kind === "refused") return { res: null, settlementTx: null, detail: sent.detail };
  const s = readSettlement(sent.res);
  const detail = s?.success ? "settled" : (s?.errorReason ?? `HTTP ${sent.res.status}`);
  return {
    res: { status: sent.res.status, body: sent.res.body },
    settlementTx: s?.success && s.transaction ? s.transaction : null,
    detail,
  };
}

/**
 * Closes ceiling `txnId` on-chain (creditCeiling) and finishes its entry with what was settled: the ceiling less the
 * credit. A ceiling closed before (by another run) is read from its SchemeCredited event; one never authorised (no
 * record, no credit) settled nothing. The settlement transaction the seller named is kept only when it moved the
 * wallet's USDC.
 */
async function closeCeiling(
  room: Room,
  txnId: string,
  detail: string,
  sellerTx: string | null = null,
): Promise<{ settled: bigint; spentToday: bigint; settlementTx: string | null }> {
  const { ctx } = room;
  const doc = await ctx.store.payments.findOne({ txnId });
  if (!doc?.paymentId || !doc.ceiling) throw new Error(`payment ${txnId} is no upto ceiling`);
  const ceiling = BigInt(doc.ceiling);
  const credit = await room.schemes.creditCeiling(doc.agentAddress, doc.paymentId);
  if (credit) await ctx.gas.charge(doc.ownerAddress, credit.receipt);
  const credited = credit ? credit.credited : await creditedBefore(room, doc.agentAddress, doc.paymentId);
  const settled = credited === null ? 0n : ceiling - credited;
  const settlementTx = settled > 0n ? await paidIn(room, doc.agentAddress, sellerTx) : null;
  await finish(room, txnId, ["authorizing", "authorized"], {
    status: settled > 0n ? "approved" : "failed",
    amount: settled.toString(),
    txHash: settlementTx,
    creditTxHash: credit?.txHash ?? null,
    releaseTxHash: credit?.txHash ?? null,
    settledAt: settled > 0n ? new Date() : null,
    ...(credited === null ? { reason: "not_authorized" } : {}),
    detail: settled > 0n ? (detail === "settled" ? null : detail) : `ceiling closed: ${detail}`.slice(0, 300),
  });
  const spentToday = await ctx.chain
    .policyAt(doc.policyAddress, ctx.chain.provider)
    .spentToday()
    .catch(() => 0n);
  return { settled, spentToday, settlementTx };
}

/** What SchemeCredited gave back for ceiling `paymentId`; null when it was never credited (never authorised). */
async function creditedBefore(room: Room, agent: string, paymentId: string): Promise<bigint | null> {
  const iface = interfaceOf("SpendPolicySchemes");
  const topic = iface.getEvent("SchemeCredited")?.topicHash ?? null;
  const logs = await room.ctx.chain.provider.getLogs({ address: agent, topics: [topic, paymentId], fromBlock: 0 });
  const last = logs.at(-1);
  return last ? ((iface.parseLog(last)?.args.amount as bigint | undefined) ?? 0n) : null;
}

/** `hash` when it is a transaction that moved USDC out of `agent`; null otherwise (a seller's word is not proof). */
async function paidIn(room: Room, agent: string, hash: string | null): Promise<string | null> {
  if (!hash || !/^0x[0-9a-fA-F]{64}$/.test(hash)) return null;
  const receipt = await room.ctx.chain.provider.getTransactionReceipt(hash).catch(() => null);
  const usdc = room.ctx.config.usdcAddress.toLowerCase();
  const from = `0x${agent.toLowerCase().replace(/^0x/, "").padStart(64, "0")}`;
  const moved = receipt?.logs.some((l) => l.address.toLowerCase() === usdc && l.topics[1]?.toLowerCase() === from);
  return moved ? hash : null;
}

/**
 * Recovery of an upto payment left in flight: an authorisation never seen mined is voided first (none can land
 * after: the payment failed); otherwise the ceiling is closed (creditCeiling), and what the seller settled before
 * stays paid.
 */
export async function resolveUpto(room: Room, doc: PaymentDoc): Promise<void> {
  if (doc.phase === "done" || doc.phase === "quoted" || !doc.paymentId || !doc.ceiling) return;
  let mined = doc.authorizeBlock != null;
  if (!mined && doc.authorizeTxHash) {
    const receipt = await room.ctx.chain.receiptOf(doc.authorizeTxHash, 30_000).catch(() => null);
    if (!receipt && (await room.ctx.chain.provider.getTransaction(doc.authorizeTxHash).catch(() => null))) return; // still pending
    mined = receipt !== null;
  }
  if (!mined && (await voidUnsent(room, { ...doc, paymentId: doc.paymentId })) === "voided") return;
  await closeCeiling(room, doc.txnId, "recovered after an interruption");
}
