/**
 * A channel's voucher (channel.ts decides when it is one): its record and its outcome (vouchers.ts), the paid request,
 * and what the seller answers, for a voucher alone or the one a deposit carries (channelDeposit.ts): the corrective
 * 402, a deposit that landed or not, the vouchers in doubt it settles.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { fromBaseUnits } from "../../amounts";
import { LeaseLostError, upstreamError } from "../../errors";
import type { PayApproved } from "../../schemas/payments";
import type { PaymentDoc } from "../../store/documents";
import type { ChannelVoucher } from "../../store/channelDocuments";
import { readSettlement } from "../../x402/buyer";
import { type ChannelPaymentSigned, chargedOf, signVoucherPayment } from "./channelPayment";
import { schemeSigner } from "./schemeSigner";
import { finish } from "../context";
import { newTxnId } from "../outcomes";
import { type PaymentResult, refused } from "../result";
import { send } from "../send";
import { channelBalance, creditDeposit, sellersCharge } from "./channelState";
import { recordDoubts, recordVouchers, settleDoubts, voucherRecord } from "./vouchers";
import { type ChannelRun, NO_PAYMENT_ID, advance, afterSend, maxOf } from "./channelRun";

/**
 * A voucher for `run.cumulative`, sent with the request (after `made`, the deposit this request made, if any).
 * `replaces`: the voucher of this request the seller refused with its corrective 402 (the key answers for this one).
 */
export async function voucher(
  run: ChannelRun,
  made: { txHash: string | null; amount: bigint } | null,
  resynced = false,
  replaces?: string,
): Promise<PaymentResult> {
  const { room, pc, quote } = run;
  const txnId = newTxnId();
  const c = run.channel;
  // What the wallet had signed before this voucher: the most a seller can have counted without it (the resync's bound).
  const signedBefore = BigInt(c.signed);
  const ref = { channelId: c.channelId, cumulative: run.cumulative.toString(), deposit: null, depositPaymentId: null };
  const record = voucherRecord(room, pc, txnId, run.cumulative, BigInt(c.charged), quote.amount);
  // Signed locally beside the write below (started in the next turn of the event loop, once the write is on its way to
  // the store); the voucher leaves this process only after the sequence has moved past it, so a crash never leaves a
  // voucher out that a later one could repeat, nor one the channel does not record.
  const cumulative = run.cumulative;
  const signing = nextTurn().then(() =>
    signVoucherPayment(schemeSigner(pc.agent.address, run.key, NO_PAYMENT_ID), quote, c.config, c.channelId, cumulative),
  );
  signing.catch(() => undefined);
  room.channelCopies.sending.add(txnId);
  try {
    // One write: the sequence past this voucher, the charge as known, and the voucher's record (vouchers.ts).
    await advance(run, { signed: maxOf(BigInt(c.signed), cumulative).toString(), charged: c.charged, unsettled: [...run.doubts, record] });
    // With an Idempotency-Key, the key's record is the fence, held once the voucher is written (authorize.ts, begin).
    const key = pc.fences?.key;
    if (key && !(await key.hold(txnId, replaces))) {
      await advance(run, { unsettled: run.doubts }).catch(() => undefined);
      room.ctx.logger.warn({ txnId }, "the Idempotency-Key this voucher ran under was taken over (this instance stalled); not sent");
      throw new LeaseLostError();
    }
    const signed = await signing;
    // A run that stalled past its record's lease sends nothing: recovery may hold the voucher in doubt by now.
    if (Date.now() >= record.leaseUntil.getTime()) throw new LeaseLostError();
    return await served(run, txnId, signed, ref, made, resynced ? null : signedBefore, record);
  } finally {
    room.channelCopies.sending.delete(txnId);
  }
}

/**
 * Sends the paid request and writes its outcome from what the seller and the chain say: a voucher's as its ledger entry
 * (its record is in the channel: vouchers.ts), a deposit's by finishing its entry. A deposit that did not land is
 * closed on-chain (creditChannel kills its authorisation and credits it back); one that landed stays in the channel,
 * held for later requests or a refund, even when this request was not served. What the seller answers settles the
 * channel's vouchers in doubt (`run.doubts`).
 */
export async function served(
  run: ChannelRun,
  txnId: string,
  signed: ChannelPaymentSigned,
  ref: NonNullable<PaymentDoc["channel"]>,
  made: { txHash: string | null; amount: bigint } | null,
  /** Not yet resynchronised: the highest voucher signed before this request's (the corrective 402's bound). */
  resyncBound: bigint | null = null,
  /** A voucher's record (absent for a deposit's payment, whose entry is in flight). */
  record?: ChannelVoucher,
): Promise<PaymentResult> {
  const { room, pc, quote } = run;
  const sent = await send(room, pc.seller, signed);
  const res = sent.kind === "answered" ? sent.res : null;
  const settlement = res ? readSettlement(res) : null;
  // The seller counts the channel otherwise (a voucher of an interrupted payment reached it, or one in doubt did not):
  // its corrective 402 names its cumulative charge. Taken when the wallet signed that much before this voucher (the
  // seller could claim it anyway), and the request is paid once more from there, once. A deposit refused so is not
  // paid again (nothing of it landed: credited back below), but the charge stands for the next payment.
  if (res?.status === 402 && resyncBound !== null) {
    const base = await sellersCharge(room, res, resyncBound, run.channel.channelId);
    if (base !== null && base !== BigInt(run.channel.charged)) {
      await recordDoubts(room, run.channel, settleDoubts(run.doubts, base, true, "the seller's corrective 402"));
      run.doubts = [];
      if (!record) await afterSend(run, { charged: base.toString(), unsettled: [] });
      else {
        const detail = `the seller's channel had charged ${base}, not ${run.channel.charged}: resynchronised and paid again`;
        await recordVouchers(room, run.channel, [[record, { status: "failed", detail }]]);
        run.channel = { ...run.channel, charged: base.toString() };
        run.cumulative = base + quote.amount;
        if (run.cumulative <= BigInt(run.channel.balance)) return voucher(run, made, true, txnId);
        await afterSend(run, { charged: base.toString(), unsettled: [] });
        return refused(
          upstreamError("The seller's channel had charged more than this service knew; the channel needs a new deposit: pay again."),
        );
      }
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
    const detail = `seller: ${why}`.slice(0, 300 - held.length) + held;
    if (record) {
      await recordVouchers(room, run.channel, [[record, { status: "failed", detail }]]);
      // Nothing in doubt left: this copy knows the channel again (its charge unchanged).
      if (!run.doubts.length) room.channelCopies.keep({ ...run.channel, unsettled: [] });
    } else await finish(room, txnId, ["authorizing", "authorized"], { status: "failed", reason: "settlement_failed", detail });
    return refused(
      upstreamError(`The seller did not accept the channel payment (${why.slice(0, 200)}); nothing was charged for this request.${held}`, {
        reason: why.slice(0, 200),
        transactionId: txnId,
        ...(res ? { sellerStatus: res.status } : {}),
      }),
    );
  }
  const charged = chargedOf(settlement?.extra, quote.amount);
  const total = BigInt(run.channel.charged) + charged;
  const depositTx = ref.depositPaymentId && settlement?.transaction ? settlement.transaction : (made?.txHash ?? null);
  // Accepted on a base that counts the vouchers in doubt: the seller had counted them.
  const doubts = settleDoubts(run.doubts, BigInt(run.channel.charged), true, "the channel's next voucher was accepted after it");
  if (record) {
    // The voucher's outcome is its entry; the channel's charge is written with its next voucher (this one's record
    // says meanwhile what it charged), and this copy knows it now.
    await recordDoubts(room, run.channel, doubts);
    await recordVouchers(room, run.channel, [[record, { status: "approved", charged, total, txHash: depositTx }]]);
    room.channelCopies.keep({ ...run.channel, charged: total.toString(), unsettled: [] });
  } else {
    await recordDoubts(room, run.channel, doubts);
    // The channel's charge and the entry's outcome side by side: a crash between them that leaves the charge behind
    // costs the next voucher one corrective 402 from the seller (resynchronised above), never a second payment.
    await Promise.all([
      afterSend(run, { charged: total.toString(), unsettled: [] }),
      finish(room, txnId, ["authorizing", "authorized"], {
        status: "approved",
        amount: charged.toString(),
        txHash: depositTx,
        settledAt: new Date(),
        channel: { ...ref, cumulative: total.toString() },
      }),
    ]);
  }
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
