/**
 * A channel's deposit, when its balance does not cover the next voucher or its latest deposit is of an older epoch:
 * authorised on-chain (authorizeDeposit: counted against every budget like a payment) with the request's voucher,
 * written down, then sent; what the seller answers is channelVoucher.ts's (served).
 */
import { randomBytes } from "node:crypto";
import { appError, conflict } from "../../errors";
import type { AllowlistProof } from "../../policy/allowlist";
import { type ChannelPaymentSigned, signDeposit } from "./channelPayment";
import { schemeSigner } from "./schemeSigner";
import { authorize, begin, blockedOnchain, markAuthorized } from "../authorize";
import { fencesOf, ledgerBase } from "../context";
import { newTxnId } from "../outcomes";
import { type PaymentResult, refused } from "../result";
import { pendingWithdrawal, resolveChannel } from "./channelState";
import { type ChannelRun, advance, maxOf } from "./channelRun";
import { served } from "./channelVoucher";

/** A deposit of `amount` authorised on-chain with the request's voucher, then sent. */
export async function deposit(run: ChannelRun, amount: bigint, proof: AllowlistProof, epoch: number): Promise<PaymentResult> {
  const { room, pc, quote } = run;
  const { ctx } = room;
  // The wallet takes no deposit into a channel while its forced withdrawal from it is in progress (what that brings
  // back belongs to the deposits before): said here, before anything is signed, rather than as a reverted authorisation.
  if ((await pendingWithdrawal(room, run.channel.channelId)).initiatedAt !== 0) {
    return refused(
      conflict(
        `Channel ${run.channel.channelId} is being withdrawn: it takes no deposit until the withdrawal is finished (POST /agents/${pc.agent.address}/channels/${run.channel.channelId}/withdraw once its delay has passed). Nothing was paid.`,
      ),
    );
  }
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
  // What the wallet had signed before this request: the most a corrective 402 may name (channelVoucher.ts, served).
  const signedBefore = BigInt(c.signed);
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
  return served(run, txnId, signed, ref, { txHash: null, amount }, signedBefore);
}
