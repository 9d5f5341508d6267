/**
 * A `batch-settlement` payment (channels; docs/schemes.md). One channel per seller and terms, paid from the wallet
 * alone (payerAuthorizer 0). The first payment deposits (authorizeDeposit on-chain: counted against every budget like a
 * payment, to the seller's payee), later ones sign a voucher locally, with no chain round trip, until the deposit is
 * spent; then a top-up deposit, authorised the same way. The wallet answers vouchers only for channels it deposited
 * into this epoch, and the channel contract lets the seller claim at most what was deposited: a stolen server can
 * sign vouchers, but cannot move more than the deposits the policy authorised. What comes back (a refund) is credited
 * to the windows it was taken from (close.ts).
 *
 * The channel's document (ChannelDoc) is written under the agent's lock, each write a compare-and-set on its version,
 * so the voucher sequence never forks across instances or restarts.
 */
import { randomBytes } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import { fromBaseUnits } from "../../amounts";
import { AppError, appError, upstreamError } from "../../errors";
import { type AllowlistProof, payeeAllowed } from "../../policy/allowlist";
import type { PayApproved } from "../../schemas/payments";
import type { ChannelDoc, PaymentDoc } from "../../store/documents";
import { readSettlement } from "../../x402/buyer";
import { type ChannelPaymentSigned, channelOf, chargedOf, signDeposit, signVoucherPayment } from "./channelPayment";
import type { Quote } from "../../x402/pick";
import { schemeSigner } from "./schemeSigner";
import type { AgentSigner } from "../../wallets/provider";
import { authorize, begin, blockedOnchain, markAuthorized } from "../authorize";
import { type PaymentContext, type Room, fencesOf, finish, ledgerBase } from "../context";
import type { Admission } from "../decide";
import { newTxnId } from "../outcomes";
import { refuse } from "../refuse";
import { type PaymentResult, refused } from "../result";
import { send } from "../send";
import { channelBalance, creditDeposit, resolveChannel, sellersCharge } from "./channelState";

const NO_PAYMENT_ID = `0x${"0".repeat(64)}`;

/** A channel payment as its steps see it. */
interface ChannelRun {
  room: Room;
  pc: PaymentContext;
  quote: Quote;
  key: AgentSigner;
  channel: ChannelDoc;
  /** The voucher's cumulative: what the seller had charged plus this request's price. */
  cumulative: bigint;
  /** The channel is this instance's copy (ChannelCopies), not yet confirmed by a write. */
  fromCopy: boolean;
}

/** A copy of the channel failed its first write: another writer moved it. Nothing was signed or sent. */
class StaleCopy extends Error {}

/** Pays `pc` through its seller's channel: a voucher, after a deposit when the channel lacks one. */
export async function payChannel(
  room: Room,
  pc: PaymentContext,
  quote: Quote,
  admission: Admission & { status: "admitted" },
): Promise<PaymentResult | "exact"> {
  try {
    return await payFrom(room, pc, quote, admission, true);
  } catch (err) {
    // This instance's copy was behind: paid from the store's channel instead, from the start.
    if (err instanceof StaleCopy) return payFrom(room, pc, quote, admission, false);
    throw err;
  }
}

async function payFrom(
  room: Room,
  pc: PaymentContext,
  quote: Quote,
  admission: Admission & { status: "admitted" },
  copyFirst: boolean,
): Promise<PaymentResult | "exact"> {
  const { ctx } = room;
  const key = await ctx.wallets.signer(pc.agent.signerAddress);
  const { config, channelId } = channelOf(schemeSigner(pc.agent.address, key, NO_PAYMENT_ID), quote);
  const now = new Date();
  const fresh: ChannelDoc = {
    channelId,
    agentAddress: pc.agent.address,
    ownerAddress: pc.agent.ownerAddress,
    merchant: pc.merchant,
    serviceUrl: pc.serviceUrl,
    receiver: config.receiver,
    config,
    balance: "0",
    charged: "0",
    signed: "0",
    epoch: admission.policy.epoch,
    deposits: [],
    status: "open",
    version: 0,
    createdAt: now,
    updatedAt: now,
  };
  const copy = copyFirst ? room.channelCopies.get(channelId) : undefined;
  const stored = copy ? null : await ctx.store.channels.findOne({ channelId });
  if (stored) room.channelCopies.keep(stored);
  const channel = copy ?? stored ?? fresh;
  const cumulative = BigInt(channel.charged) + quote.amount;
  const run: ChannelRun = { room, pc, quote, key, channel, cumulative, fromCopy: copy !== undefined };
  const { policy, proof } = admission;
  const voucherCovers = (c: ChannelDoc) => c.status === "open" && c.epoch === policy.epoch && BigInt(c.balance) >= cumulative;
  // A copy decides only a voucher (checked by its first write); anything else (a deposit, and the policy's refusal,
  // approval or 429 on the way to one) is decided on the store's channel, which another instance may have topped up.
  if (copy && !voucherCovers(copy)) return payFrom(room, pc, quote, admission, false);
  const payTo = quote.requirement.payTo;
  // The policy as last read, before anything is signed: the wallet would refuse the voucher anyway (its epoch moves
  // with a pause), but the seller is not asked to find out. The chain decides when this copy is stale.
  if (policy.paused) return refuse(room, pc, { amount: quote.amount, reason: "policy_paused", proof });
  if (!payeeAllowed(proof, payTo)) return refuse(room, pc, { amount: quote.amount, reason: "payee_not_allowed", proof, payTo });
  // Vouchers only from a channel whose latest deposit was authorised in the wallet's current epoch.
  if (voucherCovers(channel)) return voucher(run, null);

  // A deposit: this many requests' worth, or only what this request needs when the policy would not allow that much.
  const needed = cumulative > BigInt(channel.balance) ? cumulative - BigInt(channel.balance) : quote.amount;
  const wanted = quote.amount * BigInt(ctx.config.channelDepositRequests);
  let amount = wanted > needed ? wanted : needed;
  let decision = await ctx.telemetry.step("decide", () => room.decisions.decide(pc.agent, pc.merchant, admission, amount, payTo));
  if (decision.status !== "allow" && amount > needed) {
    amount = needed;
    decision = await room.decisions.decide(pc.agent, pc.merchant, admission, amount, payTo);
  }
  if (decision.status === "block") return refuse(room, pc, { amount, reason: decision.reason, proof: decision.proof, payTo });
  if (decision.status === "requires_approval") return "exact";
  const swap = await decision.swap;
  if (swap.kind !== "none") {
    const detail =
      swap.kind === "refuse" ? swap.detail : "the wallet lacks the USDC, and swaps before paying are made for exact payments only";
    return refuse(room, pc, { amount, reason: "insufficient_funds", proof: null, detail });
  }
  try {
    await ctx.gas.check(pc.agent.ownerAddress);
  } catch (err) {
    if (err instanceof AppError) return refused(err);
    throw err;
  }
  return deposit(run, amount, decision.proof, decision.policy.epoch);
}

/**
 * Writes `set` on the channel while it is still at `run.channel`'s version; the channel as written (kept as this
 * instance's copy). A copy's first write that finds another version throws StaleCopy (the payment starts again from
 * the store); any other, a 409.
 */
async function advance(run: ChannelRun, set: Partial<ChannelDoc>, push?: ChannelDoc["deposits"][number]): Promise<ChannelDoc> {
  try {
    const written = await write(run, set, push);
    run.room.channelCopies.keep(written);
    return written;
  } catch (err) {
    run.room.channelCopies.drop(run.channel.channelId);
    if (run.fromCopy && err instanceof AppError) throw new StaleCopy();
    throw err;
  } finally {
    run.fromCopy = false;
  }
}

async function write(run: ChannelRun, set: Partial<ChannelDoc>, push?: ChannelDoc["deposits"][number]): Promise<ChannelDoc> {
  const { channels } = run.room.ctx.store;
  const c = run.channel;
  const next = { ...set, version: c.version + 1, updatedAt: new Date() };
  if (c.version === 0) {
    // A new channel: inserted only where none has this id (another run of the agent would hold its lock).
    const doc = { ...c, ...next, deposits: push ? [push] : [] };
    const r = await channels.updateOne({ channelId: c.channelId }, { $setOnInsert: doc }, { upsert: true });
    if (r.upsertedCount !== 1) throw appError("conflict", "This agent's channel changed while it paid; nothing was paid. Retry.");
    return (run.channel = doc);
  }
  const r = await channels.updateOne(
    { channelId: c.channelId, version: c.version },
    { $set: next, ...(push ? { $push: { deposits: push } } : {}) },
  );
  if (r.matchedCount !== 1) throw appError("conflict", "This agent's channel changed while it paid; nothing was paid. Retry.");
  return (run.channel = { ...c, ...next, deposits: push ? [...c.deposits, push] : c.deposits });
}

/** A voucher for `run.cumulative`, sent with the request (after `made`, the deposit this request made, if any). */
async function voucher(run: ChannelRun, made: { txHash: string | null; amount: bigint } | null, resynced = false): Promise<PaymentResult> {
  const { room, pc, quote } = run;
  const txnId = newTxnId();
  const base = ledgerBase(pc, null);
  const c = run.channel;
  // What the wallet had signed before this voucher: the most a seller can have counted without it (the resync's bound).
  const signedBefore = BigInt(c.signed);
  const ref = { channelId: c.channelId, cumulative: run.cumulative.toString(), deposit: null, depositPaymentId: null };
  // Signed locally beside the writes below (started in the next turn of the event loop, once the writes are on their
  // way to the store); the voucher leaves this process only after the sequence has moved past it and the fences are
  // committed, so a crash never leaves a voucher out that a later one could repeat.
  const cumulative = run.cumulative;
  const signing = nextTurn().then(() =>
    signVoucherPayment(schemeSigner(pc.agent.address, run.key, NO_PAYMENT_ID), quote, c.config, c.channelId, cumulative),
  );
  signing.catch(() => undefined);
  await begin(room, {
    // The sequence's write beside the entry's, both before the fences are committed and anything is sent.
    alongside: advance(run, { signed: maxOf(BigInt(c.signed), run.cumulative).toString() }),
    txnId,
    base,
    amount: quote.amount,
    signed: {
      nonce: `0x${randomBytes(32).toString("hex")}`,
      transfer: { payTo: c.receiver, amount: quote.amount, validAfter: 0n, validBefore: 0n },
    },
    fences: fencesOf(pc),
    extra: { scheme: "batch-settlement", channel: ref },
  });
  const signed = await signing;
  return served(run, txnId, signed, ref, made, resynced ? null : signedBefore);
}

/** A deposit of `amount` authorised on-chain with the request's voucher, then sent. */
async function deposit(run: ChannelRun, amount: bigint, proof: AllowlistProof, epoch: number): Promise<PaymentResult> {
  const { room, pc, quote } = run;
  const { ctx } = room;
  const paymentId = `0x${randomBytes(32).toString("hex")}`;
  const signer = schemeSigner(pc.agent.address, run.key, paymentId);
  let signed: ChannelPaymentSigned & { deposit: { amount: bigint; validAfter: bigint; validBefore: bigint; nonceSalt: string } };
  try {
    signed = await signDeposit(signer, quote, run.channel.config, amount, run.cumulative, ctx.config.maxPaymentValiditySeconds);
  } catch (err) {
    return refused(
      appError(
        "unsupported_payment",
        `The seller's batch-settlement requirement could not be signed (${(err as Error).message}); nothing was paid.`,
      ),
    );
  }
  const txnId = newTxnId();
  const base = ledgerBase(pc, null);
  const c = run.channel;
  const d = signed.deposit;
  const ref = { channelId: c.channelId, cumulative: run.cumulative.toString(), deposit: amount.toString(), depositPaymentId: paymentId };
  const transfer = { payTo: c.receiver, amount, validAfter: d.validAfter, validBefore: d.validBefore };
  await advance(
    run,
    { signed: maxOf(BigInt(c.signed), run.cumulative).toString(), status: "open", epoch },
    { paymentId, amount: amount.toString(), txnId, credited: null },
  );
  await begin(room, {
    txnId,
    base,
    amount: quote.amount,
    signed: { nonce: paymentId, transfer },
    fences: fencesOf(pc),
    extra: { scheme: "batch-settlement", channel: ref },
  });
  const sentOff = await authorize(room, {
    txnId,
    base,
    signed: { nonce: paymentId, transfer },
    proof,
    call: (onSent) => room.schemes.authorizeDeposit(pc.agent.address, paymentId, pc.merchant, proof, c.config, d, undefined, onSent),
  });
  if (sentOff.kind === "failed") {
    const doc = await ctx.store.payments.findOne({ txnId });
    if (doc) await resolveChannel(room, doc).catch(() => undefined);
    return refused(sentOff.error);
  }
  const { result } = sentOff;
  await ctx.gas.charge(base.ownerAddress, result.receipt);
  if (!result.authorized) {
    const blocked = await blockedOnchain(room, { txnId, base, amount, result });
    await advance(run, { deposits: run.channel.deposits.filter((x) => x.paymentId !== paymentId) });
    return blocked;
  }
  await markAuthorized(room, txnId, result);
  return served(run, txnId, signed, ref, { txHash: null, amount });
}

/**
 * Sends the paid request and finishes its entry from what the seller and the chain say. A deposit that did not land
 * is closed on-chain (creditChannel kills its authorisation and credits it back); one that landed stays in the
 * channel, held for later requests or a refund, even when this request was not served.
 */
async function served(
  run: ChannelRun,
  txnId: string,
  signed: ChannelPaymentSigned,
  ref: NonNullable<PaymentDoc["channel"]>,
  made: { txHash: string | null; amount: bigint } | null,
  /** A voucher alone, not yet resynchronised: the highest voucher signed before it. */
  resyncBound: bigint | null = null,
): Promise<PaymentResult> {
  const { room, pc, quote } = run;
  const sent = await send(room, pc.seller, signed);
  const res = sent.kind === "answered" ? sent.res : null;
  const settlement = res ? readSettlement(res) : null;
  // The seller counts the channel otherwise (a voucher of an interrupted payment reached it, say): its corrective 402
  // names its cumulative charge. Taken when the wallet signed that much before this voucher (the seller could claim it
  // anyway), and the request is paid once more from there, once.
  if (res?.status === 402 && !ref.depositPaymentId && resyncBound !== null) {
    const base = await sellersCharge(room, res, resyncBound, run.channel.channelId);
    if (base !== null && base !== BigInt(run.channel.charged)) {
      await finish(room, txnId, ["authorizing", "authorized"], {
        status: "failed",
        reason: "settlement_failed",
        detail: `the seller's channel had charged ${base}, not ${run.channel.charged}: resynchronised and paid again`,
      });
      await advance(run, { charged: base.toString() });
      run.cumulative = base + quote.amount;
      if (run.cumulative <= BigInt(run.channel.balance)) return voucher(run, made, true);
      return refused(
        upstreamError("The seller's channel had charged more than this service knew; the channel needs a new deposit: pay again."),
      );
    }
  }
  let landed = false;
  if (ref.depositPaymentId) {
    const onchain = await channelBalance(room, ref.channelId);
    landed = onchain >= BigInt(run.channel.balance) + BigInt(ref.deposit ?? 0);
    if (landed) await afterSend(run, { balance: onchain.toString() });
    else await creditDeposit(room, run.channel, ref.depositPaymentId);
  }
  const ok = res !== null && res.status >= 200 && res.status < 300 && settlement?.success === true && (landed || !ref.depositPaymentId);
  if (!ok) {
    const why = sent.kind === "refused" ? sent.detail : (settlement?.errorReason ?? `HTTP ${res?.status}`);
    const held = landed
      ? " The deposit landed in the channel and stays there for later requests (or a refund)."
      : ref.depositPaymentId
        ? " The deposit did not land; its authorisation was closed on-chain and the budget credited back."
        : "";
    await finish(room, txnId, ["authorizing", "authorized"], {
      status: "failed",
      reason: "settlement_failed",
      detail: `seller: ${why}`.slice(0, 300),
    });
    return refused(
      upstreamError(`The seller did not accept the channel payment (${why.slice(0, 200)}); nothing was charged for this request.${held}`, {
        reason: why.slice(0, 200),
        ...(res ? { sellerStatus: res.status } : {}),
      }),
    );
  }
  const charged = chargedOf(settlement?.extra, quote.amount);
  const total = BigInt(run.channel.charged) + charged;
  const depositTx = ref.depositPaymentId && settlement?.transaction ? settlement.transaction : (made?.txHash ?? null);
  // The channel's charge and the entry's outcome side by side: a crash between them that leaves the charge behind
  // costs the next voucher one corrective 402 from the seller (resynchronised below), never a second payment.
  await Promise.all([
    afterSend(run, { charged: total.toString() }),
    finish(room, txnId, ["authorizing", "authorized"], {
      status: "approved",
      amount: charged.toString(),
      txHash: depositTx,
      settledAt: new Date(),
      channel: { ...ref, cumulative: total.toString() },
    }),
  ]);
  const outcome: PayApproved = {
    status: "approved",
    txHash: depositTx,
    amount: fromBaseUnits(charged),
    currency: "USDC",
    merchant: pc.merchant,
    settledAt: new Date().toISOString(),
    intent: pc.intent,
    transactionId: txnId,
    paymentId: ref.depositPaymentId,
    authorizeTxHash: null,
    scheme: "batch-settlement",
    channel: {
      channelId: ref.channelId,
      cumulative: fromBaseUnits(total),
      deposited: fromBaseUnits(run.channel.deposits.reduce((n, x) => n + BigInt(x.amount), 0n)),
      depositTxHash: depositTx,
    },
    response: { status: res.status, body: res.body },
  };
  return { kind: "approved", outcome };
}

const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * A channel write once the payment has left: when another instance took the payment over meanwhile (this one stalled
 * past its lease), the channel is left as that one wrote it (the seller's corrective 402 reconciles the charge) and
 * the answer still tells what the seller did.
 */
async function afterSend(run: ChannelRun, set: Partial<ChannelDoc>): Promise<void> {
  try {
    await advance(run, set);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    run.room.ctx.logger.warn(
      { channelId: run.channel.channelId },
      "a channel changed while its payment was with the seller; left as written",
    );
  }
}
