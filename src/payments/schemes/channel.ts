/**
 * A `batch-settlement` payment (channels; docs/schemes.md). One channel per seller and terms, paid from the wallet
 * alone (payerAuthorizer 0). The first payment deposits (authorizeDeposit on-chain: counted against every budget like a
 * payment, to the seller's payee), later ones sign a voucher locally, with no chain round trip, until the deposit is
 * spent; then a top-up deposit, authorised the same way. The wallet answers vouchers only for channels it deposited
 * into this epoch, and the channel contract lets the seller claim at most what was deposited: a stolen server can
 * sign vouchers, but cannot move more than the deposits the policy authorised. What comes back (a refund) is credited
 * to the windows it was taken from (close.ts).
 *
 * Each write of the channel's document (ChannelDoc) is a compare-and-set on its version, so the voucher sequence never
 * forks across instances or restarts. A voucher from this instance's copy of the channel runs without the agent's
 * lock (`here`: only this process's queue for the agent): its compare-and-set is its fence. Deposits, refusals and
 * channels read from the store run under the lock.
 */
import { AppError } from "../../errors";
import { payeeAllowed } from "../../policy/allowlist";
import type { ChannelDoc } from "../../store/channelDocuments";
import { channelOf } from "./channelPayment";
import type { Quote } from "../../x402/pick";
import { schemeSigner } from "./schemeSigner";
import type { PaymentContext, Room } from "../context";
import type { Admission } from "../decide";
import { refuse } from "../refuse";
import { type PaymentResult, refused } from "../result";
import { settledRead } from "./vouchers";
import { type ChannelRun, NO_PAYMENT_ID, StaleCopy } from "./channelRun";
import { deposit } from "./channelDeposit";
import { voucher } from "./channelVoucher";

/** What payVoucherHere answers for a payment that needs the agent's lock: all but a voucher from a copy. */
export const NEEDS_LOCK = "needs the agent's lock";

/** Pays `pc` through its seller's channel, under the agent's lock: a voucher, after a deposit when the channel lacks one. */
export async function payChannel(
  room: Room,
  pc: PaymentContext,
  quote: Quote,
  admission: Admission & { status: "admitted" },
): Promise<PaymentResult | "exact"> {
  let paid;
  try {
    paid = await payFrom(room, pc, quote, admission, "copy");
  } catch (err) {
    // This instance's copy was behind: paid from the store's channel instead, from the start.
    if (!(err instanceof StaleCopy)) throw err;
    paid = await payFrom(room, pc, quote, admission, "store");
  }
  if (paid === NEEDS_LOCK) throw new Error("a channel payment under the agent's lock needed the lock");
  return paid;
}

/**
 * A voucher from this instance's copy of the channel, without the agent's lock (only this process's queue for the
 * agent): the copy's compare-and-set is its fence. NEEDS_LOCK, with nothing written or sent, for anything else: a
 * channel this instance does not know, a copy another writer moved past, a deposit, a refusal.
 */
export async function payVoucherHere(
  room: Room,
  pc: PaymentContext,
  quote: Quote,
  admission: Admission & { status: "admitted" },
): Promise<PaymentResult | typeof NEEDS_LOCK> {
  try {
    const paid = await payFrom(room, pc, quote, admission, "here");
    return paid === "exact" ? NEEDS_LOCK : paid;
  } catch (err) {
    if (err instanceof StaleCopy) return NEEDS_LOCK;
    throw err;
  }
}

/** Where a payment's channel comes from: this instance's copy alone (`here`, no lock), the copy first, the store. */
type ChannelSource = "here" | "copy" | "store";

async function payFrom(
  room: Room,
  pc: PaymentContext,
  quote: Quote,
  admission: Admission & { status: "admitted" },
  source: ChannelSource,
): Promise<PaymentResult | "exact" | typeof NEEDS_LOCK> {
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
  const copy = source === "store" ? undefined : room.channelCopies.settled(channelId);
  if (source === "here" && !copy) return NEEDS_LOCK;
  const stored = copy ? null : await ctx.store.channels.findOne({ channelId });
  if (stored) room.channelCopies.keep(stored);
  // The store's channel with what its unsettled vouchers charged (waiting for one another instance is sending).
  const read = stored ? await settledRead(room, stored, () => ctx.store.channels.findOne({ channelId })) : null;
  const channel = copy ?? read?.channel ?? fresh;
  const cumulative = BigInt(channel.charged) + quote.amount;
  const run: ChannelRun = { room, pc, quote, key, channel, cumulative, fromCopy: copy !== undefined, doubts: read?.doubts ?? [] };
  const { policy, proof } = admission;
  const voucherCovers = (c: ChannelDoc) => c.status === "open" && c.epoch === policy.epoch && BigInt(c.balance) >= cumulative;
  // A copy decides only a voucher (checked by its first write); anything else (a deposit, and the policy's refusal,
  // approval or 429 on the way to one) is decided on the store's channel, which another instance may have topped up.
  if (copy && !voucherCovers(copy)) return source === "here" ? NEEDS_LOCK : payFrom(room, pc, quote, admission, "store");
  const payTo = quote.requirement.payTo;
  // The policy as last read, before anything is signed: the wallet would refuse the voucher anyway (its epoch moves
  // with a pause), but the seller is not asked to find out. The chain decides when this copy is stale. A refusal is
  // recorded under the agent's lock.
  if (policy.paused || !payeeAllowed(proof, payTo)) {
    if (source === "here") return NEEDS_LOCK;
    if (policy.paused) return refuse(room, pc, { amount: quote.amount, reason: "policy_paused", proof });
    return refuse(room, pc, { amount: quote.amount, reason: "payee_not_allowed", proof, payTo });
  }
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
