/**
 * A channel payment as its steps see it (channel.ts, channelVoucher.ts, channelDeposit.ts), and its writes of the
 * channel's document: each a compare-and-set on its version, the channel as written kept as this instance's copy.
 */
import { AppError, appError } from "../../errors";
import type { ChannelDoc, ChannelVoucher } from "../../store/channelDocuments";
import type { Quote } from "../../x402/pick";
import type { AgentSigner } from "../../wallets/provider";
import type { PaymentContext, Room } from "../context";

export const NO_PAYMENT_ID = `0x${"0".repeat(64)}`;

/** A channel payment as its steps see it. */
export interface ChannelRun {
  room: Room;
  pc: PaymentContext;
  quote: Quote;
  key: AgentSigner;
  channel: ChannelDoc;
  /** The voucher's cumulative: what the seller had charged plus this request's price. */
  cumulative: bigint;
  /** The channel is this instance's copy (ChannelCopies), not yet confirmed by a write. */
  fromCopy: boolean;
  /** Vouchers of the channel in doubt (vouchers.ts): counted in `channel.charged`, settled by this payment's answer. */
  doubts: ChannelVoucher[];
}

/** A copy of the channel failed its first write: another writer moved it. Nothing was signed or sent. */
export class StaleCopy extends Error {}

/**
 * Writes `set` on the channel while it is still at `run.channel`'s version; the channel as written (kept as this
 * instance's copy). A copy's first write that finds another version throws StaleCopy (the payment starts again from
 * the store); any other, a 409.
 */
export async function advance(run: ChannelRun, set: Partial<ChannelDoc>, push?: ChannelDoc["deposits"][number]): Promise<ChannelDoc> {
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

export const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * A channel write once the payment has left: when another instance took the payment over meanwhile (this one stalled
 * past its lease), the channel is left as that one wrote it (the seller's corrective 402 reconciles the charge) and
 * the answer still tells what the seller did.
 */
export async function afterSend(run: ChannelRun, set: Partial<ChannelDoc>): Promise<void> {
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
