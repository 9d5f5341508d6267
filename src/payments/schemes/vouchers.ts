/**
 * A voucher's record and outcome: one store write each. A voucher is written into its channel's document
 * (ChannelDoc.unsettled) by the compare-and-set that moves the channel's sequence past it, before it leaves the
 * process; its outcome is its ledger entry, written once (the first writer wins) before its answer. The channel's own
 * `charged` catches up at the channel's next write; until then the entries say what its unsettled vouchers charged
 * (chargedWith).
 *
 * A record whose entry is missing and whose run is gone (its lease ran out, its instance died or restarted under the
 * same id) is in doubt: the voucher may have reached the seller. Nothing of it is guessed: it is settled by what the
 * seller says of it next. Its claimed total on-chain at or past the voucher's cumulative, or the channel's next voucher
 * accepted on a base that includes it: counted, approved. A corrective 402 naming a charge below it, or a refund (the
 * seller claims all it counted first) that leaves it unclaimed: not counted, failed ("a voucher the seller did not
 * count"). Until then the channel's next voucher is signed on the base that counts it (a seller that had counted it
 * accepts it, one that had not corrects it), and its Idempotency-Key waits for its outcome.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { conflict, transient } from "../../errors";
import { chargedWith, unsettledEntries } from "../../store/channels";
import type { PaymentDoc } from "../../store/documents";
import type { ChannelDoc, ChannelVoucher } from "../../store/channelDocuments";
import { type PaymentContext, type Room, lease, recordOutcome } from "../context";
import { ledgerEntry } from "../phases";

/** How long a payment waits for another instance's voucher on the same channel before answering 409 (transient). */
const LIVE_WAIT_MS = 30_000;
const IN_FLIGHT_RETRY_S = 2;

/** The record of voucher `txnId` of `pc`, for `cumulative` on the channel's charge `base`. */
export function voucherRecord(
  room: Room,
  pc: PaymentContext,
  txnId: string,
  cumulative: bigint,
  base: bigint,
  amount: bigint,
): ChannelVoucher {
  return {
    txnId,
    cumulative: cumulative.toString(),
    base: base.toString(),
    amount: amount.toString(),
    intent: pc.intent,
    serviceUrl: pc.serviceUrl,
    ...(pc.idempotencyScope ? { idempotencyScope: pc.idempotencyScope } : {}),
    createdAt: new Date(),
    leaseUntil: lease(room),
    instanceId: room.ctx.instanceId,
  };
}

/** A voucher's outcome: approved for `charged` (the channel's cumulative charge then `total`), or failed. */
export type VoucherOutcome =
  { status: "approved"; charged: bigint; total: bigint; detail?: string; txHash?: string | null } | { status: "failed"; detail: string };

/** The finished ledger entry of voucher `v` of channel `c` with `outcome`. Writes nothing. */
export function voucherEntry(room: Room, c: ChannelDoc, v: ChannelVoucher, outcome: VoucherOutcome): PaymentDoc {
  const approved = outcome.status === "approved";
  const base = {
    agentAddress: c.agentAddress,
    ownerAddress: c.ownerAddress,
    policyAddress: c.agentAddress, // the agent's wallet is its policy contract
    merchant: c.merchant,
    serviceUrl: v.serviceUrl,
    currency: "USDC" as const,
    intent: v.intent,
    approvalId: null,
    ...(v.idempotencyScope ? { idempotencyScope: v.idempotencyScope } : {}),
  };
  const cumulative = approved ? outcome.total : BigInt(v.cumulative);
  return ledgerEntry(
    v.txnId,
    base,
    {
      amount: (approved ? outcome.charged : BigInt(v.amount)).toString(),
      status: approved ? "approved" : "failed",
      phase: "done",
      reason: approved ? null : "settlement_failed",
      detail: outcome.detail ?? null,
      // A voucher has no on-chain paymentId (the view shows none): a nonce of its own keeps the field unique.
      paymentId: `0x${randomBytes(32).toString("hex")}`,
      payTo: c.receiver,
      validAfter: 0,
      validBefore: 0,
      txHash: approved ? (outcome.txHash ?? null) : null,
      settledAt: approved ? new Date() : null,
      instanceId: room.ctx.instanceId,
      scheme: "batch-settlement",
      channel: { channelId: c.channelId, cumulative: cumulative.toString(), deposit: null, depositPaymentId: null },
    },
    v.createdAt,
  );
}

/** Writes the outcomes of vouchers of `c`, in order (a voucher in doubt before the one that settled it). */
export async function recordVouchers(room: Room, c: ChannelDoc, outcomes: [ChannelVoucher, VoucherOutcome][]): Promise<void> {
  for (const [v, outcome] of outcomes) await recordOutcome(room, voucherEntry(room, c, v, outcome));
}

/** Writes the outcomes of vouchers in doubt (settleDoubts): their Idempotency-Keys, still waiting, answer with them. */
export async function recordDoubts(room: Room, c: ChannelDoc, settled: [ChannelVoucher, VoucherOutcome][]): Promise<void> {
  await recordVouchers(room, c, settled);
  for (const [v] of settled) {
    if (!v.idempotencyScope) continue;
    const entry = await room.ctx.store.payments.findOne({ txnId: v.txnId });
    if (entry) await room.idempotency.settleFromPayment(entry);
  }
}

/**
 * The outcomes of vouchers in doubt, from the seller's charge `charged` (a corrective 402's, an accepted voucher's base,
 * the chain's claimed total): counted when it reaches a voucher's cumulative. `final`: the seller can count nothing
 * more of them (a corrective 402 names its charge now; a refund claimed all), so the others were not counted.
 * Those still in doubt (not final) are left out.
 */
export function settleDoubts(
  doubts: readonly ChannelVoucher[],
  charged: bigint,
  final: boolean,
  how: string,
): [ChannelVoucher, VoucherOutcome][] {
  return doubts.flatMap((v): [ChannelVoucher, VoucherOutcome][] => {
    const cumulative = BigInt(v.cumulative);
    if (charged >= cumulative) {
      const detail = `interrupted; the seller counted its voucher (${how})`;
      return [[v, { status: "approved", charged: cumulative - BigInt(v.base), total: cumulative, detail }]];
    }
    return final ? [[v, { status: "failed", detail: `interrupted; a voucher the seller did not count (${how})` }]] : [];
  });
}

/** A channel read from the store with its unsettled vouchers settled as far as the ledger knows them. */
export interface SettledChannel {
  /** The channel, `charged` counting its approved vouchers and those in doubt (the next voucher's base). */
  channel: ChannelDoc;
  /** Vouchers in doubt, oldest first: their run is gone and their outcome not written. */
  doubts: ChannelVoucher[];
}

/**
 * `stored`, with what its unsettled vouchers charged. A voucher another run is still sending is waited for (its
 * outcome is written before its answer, in milliseconds); one whose run is gone is in doubt, counted in the base the
 * next voucher is signed on. `read` reads the channel again while waiting.
 */
export async function settledRead(room: Room, stored: ChannelDoc, read: () => Promise<ChannelDoc | null>): Promise<SettledChannel> {
  const deadline = Date.now() + LIVE_WAIT_MS;
  let c = stored;
  for (let delay = 5; ; delay = Math.min(delay * 2, 200)) {
    const entries = await unsettledEntries(room.ctx.store.payments, [c]);
    const open = (c.unsettled ?? []).filter((v) => !entries.has(v.txnId));
    if (!open.some((v) => live(room, v))) {
      const assumed = open.reduce((n, v) => (BigInt(v.cumulative) > n ? BigInt(v.cumulative) : n), chargedWith(c, entries));
      return { channel: { ...c, charged: assumed.toString() }, doubts: open };
    }
    if (Date.now() > deadline) {
      throw transient(
        conflict("Another payment of this agent is being paid through this channel; nothing was paid. Retry."),
        IN_FLIGHT_RETRY_S,
      );
    }
    await sleep(delay);
    const again = await read();
    if (!again) throw conflict("This agent's channel changed while it paid; nothing was paid. Retry.");
    c = again;
  }
}

/** Whether a voucher's run may still be sending it: its lease runs, and its instance is alive and (if this one) at it. */
function live(room: Room, v: ChannelVoucher): boolean {
  const { ctx } = room;
  if (v.instanceId === ctx.instanceId) return room.channelCopies.sending.has(v.txnId);
  return v.leaseUntil.getTime() > Date.now() && !ctx.leases.isDead(v.instanceId);
}

/**
 * The recovery of vouchers whose run is gone (recover.ts): their outcomes from the ledger and the chain's claimed
 * total, under the agent's lock; the channel's charge written when any is settled. `own`: this instance id's vouchers
 * are gone too (at start-up). A channel with nothing to settle (its vouchers still in doubt, the seller's claim short
 * of them) is left alone, with no lock taken and nothing written. The number of vouchers settled.
 */
export async function recoverVouchers(
  room: Room,
  now: Date,
  own: boolean,
  claimed: (channelId: string) => Promise<bigint>,
): Promise<number> {
  const { ctx } = room;
  const gone = [{ "unsettled.leaseUntil": { $lt: now } }, ...(own ? [{ "unsettled.instanceId": ctx.instanceId }] : [])];
  const due = await ctx.store.channels.find({ $or: gone }).toArray();
  let settled = 0;
  for (const seen of due) {
    const before = await settlement(room, seen, claimed);
    if (!before.outcomes.length && !before.folded) continue;
    settled += await ctx.agentLock.run(seen.agentAddress, async () => {
      const c = await ctx.store.channels.findOne({ channelId: seen.channelId });
      if (!c) return 0;
      const { outcomes } = await settlement(room, c, claimed);
      await recordDoubts(room, c, outcomes);
      // The vouchers whose outcomes are written leave the record; the charge takes theirs.
      const written = await unsettledEntries(ctx.store.payments, [c]);
      const left = (c.unsettled ?? []).filter((v) => !written.has(v.txnId));
      if (left.length !== (c.unsettled ?? []).length) {
        room.channelCopies.drop(c.channelId);
        await ctx.store.channels.updateOne(
          { channelId: c.channelId, version: c.version },
          { $set: { charged: chargedWith(c, written).toString(), unsettled: left, version: c.version + 1, updatedAt: new Date() } },
        );
      }
      return outcomes.length;
    });
  }
  return settled;
}

/** What recovery can settle of channel `c` now: doubts its claim reaches, and whether any voucher has its entry. */
async function settlement(
  room: Room,
  c: ChannelDoc,
  claimed: (channelId: string) => Promise<bigint>,
): Promise<{ outcomes: [ChannelVoucher, VoucherOutcome][]; folded: boolean }> {
  const entries = await unsettledEntries(room.ctx.store.payments, [c]);
  const open = (c.unsettled ?? []).filter((v) => !entries.has(v.txnId) && !live(room, v));
  const outcomes = open.length ? settleDoubts(open, await claimed(c.channelId), false, "its claim on-chain") : [];
  return { outcomes, folded: entries.size > 0 };
}
