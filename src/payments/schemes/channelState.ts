/**
 * What the chain and the seller say of a batch-settlement channel, and settling from it: the channel contract's
 * balance (deposits landed, less refunds and withdrawals; claims do not lower it); the wallet's creditChannel, which
 * credits a deposit with what of the channel came back (and kills a deposit authorisation that never landed); the
 * charge a seller's corrective 402 names, taken only within what the chain and the signed vouchers allow; and the
 * recovery of a channel payment left in flight (resolveChannel).
 */
import { Interface } from "ethers";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import type { PaymentDoc } from "../../store/documents";
import type { ChannelDoc } from "../../store/channelDocuments";
import { type SellerResponse, readPaymentRequired } from "../../x402/buyer";
import { type Room, finish } from "../context";

const CHANNELS = new Interface([
  "function channels(bytes32 channelId) view returns (uint128 balance, uint128 totalClaimed)",
  "function pendingWithdrawals(bytes32 channelId) view returns (uint128 amount, uint40 initiatedAt)",
]);

/** The channel's pending timed withdrawal (amount 0: none) and when it was started (Unix seconds). */
export async function pendingWithdrawal(room: Room, channelId: string): Promise<{ amount: bigint; initiatedAt: number }> {
  const data = CHANNELS.encodeFunctionData("pendingWithdrawals", [channelId]);
  const answer = await room.ctx.chain.provider.call({ to: BATCH_SETTLEMENT_ADDRESS, data });
  const [amount, initiatedAt] = CHANNELS.decodeFunctionResult("pendingWithdrawals", answer) as unknown as [bigint, bigint];
  return { amount, initiatedAt: Number(initiatedAt) };
}

/** The channel contract's `channels(channelId)`: its balance and what the receiver claimed. */
export async function channelOnchain(room: Room, channelId: string): Promise<{ balance: bigint; totalClaimed: bigint }> {
  const data = CHANNELS.encodeFunctionData("channels", [channelId]);
  const answer = await room.ctx.chain.provider.call({ to: BATCH_SETTLEMENT_ADDRESS, data });
  const [balance, totalClaimed] = CHANNELS.decodeFunctionResult("channels", answer) as unknown as [bigint, bigint];
  return { balance, totalClaimed };
}

export async function channelBalance(room: Room, channelId: string): Promise<bigint> {
  return (await channelOnchain(room, channelId)).balance;
}

/**
 * creditChannel for deposit `paymentId` of `channel` (gas to its owner); marks the deposit credited in the channel's
 * document once the wallet has nothing more to give back for it. The amount credited now.
 */
export async function creditDeposit(room: Room, channel: ChannelDoc, paymentId: string): Promise<bigint> {
  const { ctx } = room;
  const r = await room.schemes.creditChannel(channel.agentAddress, paymentId);
  if (r?.receipt) await ctx.gas.charge(channel.ownerAddress, r.receipt);
  const credited = r?.credited ?? 0n;
  room.channelCopies.drop(channel.channelId); // written below, not through a payment's copy
  // Read again: the caller's copy may be older than the last write (all of them run under the agent's lock).
  const now = await ctx.store.channels.findOne({ channelId: channel.channelId });
  if (now) {
    const deposits = now.deposits.map((d) =>
      d.paymentId === paymentId ? { ...d, credited: (BigInt(d.credited ?? 0) + credited).toString() } : d,
    );
    await ctx.store.channels.updateOne(
      { channelId: now.channelId, version: now.version },
      { $set: { deposits, version: now.version + 1, updatedAt: new Date() } },
    );
  }
  return credited;
}

/**
 * The cumulative charge a seller's corrective 402 names for the channel (its `channelState.chargedCumulativeAmount`),
 * when it is one the wallet can owe: at least what the seller claimed on-chain, at most the highest voucher signed
 * BEFORE this request's (a seller that counted this request's own voucher has been paid for it, and answering 402 then
 * must not earn it a second voucher).
 */
export async function sellersCharge(room: Room, res: SellerResponse, signedBefore: bigint, channelId: string): Promise<bigint | null> {
  let accepts: unknown[];
  try {
    accepts = readPaymentRequired(res).accepts;
  } catch {
    return null;
  }
  const offer = accepts.find((a) => (a as { scheme?: unknown } | null)?.scheme === "batch-settlement") as
    { extra?: { channelState?: { chargedCumulativeAmount?: unknown } } } | undefined;
  const raw = offer?.extra?.channelState?.chargedCumulativeAmount;
  if (typeof raw !== "string" || !/^\d{1,30}$/.test(raw)) return null;
  const charged = BigInt(raw);
  const { totalClaimed } = await channelOnchain(room, channelId);
  return charged >= totalClaimed && charged <= signedBefore ? charged : null;
}

/**
 * Recovery of a channel payment left in flight. A deposit whose authorisation may still land is settled from the
 * chain: landed (the channel holds it), or closed and credited back. The request's own outcome is unknown: it is
 * failed, and the channel's charge is left where it was (the seller's next corrective 402 tells if it counted it).
 */
export async function resolveChannel(room: Room, doc: PaymentDoc): Promise<void> {
  if (doc.phase === "done" || doc.phase === "quoted" || !doc.channel) return;
  const ref = doc.channel;
  room.channelCopies.drop(ref.channelId); // written below, not through a payment's copy
  const channel = await room.ctx.store.channels.findOne({ channelId: ref.channelId });
  let detail = "interrupted after its voucher was signed; whether the seller counted it shows at the channel's next payment";
  if (ref.depositPaymentId && channel) {
    const onchain = await channelBalance(room, ref.channelId);
    if (onchain >= BigInt(channel.balance) + BigInt(ref.deposit ?? 0)) {
      await room.ctx.store.channels.updateOne(
        { channelId: ref.channelId, version: channel.version },
        { $set: { balance: onchain.toString(), version: channel.version + 1, updatedAt: new Date() } },
      );
      detail = "interrupted; its deposit landed in the channel (held for later requests or a refund)";
    } else {
      await creditDeposit(room, channel, ref.depositPaymentId);
      detail = "interrupted; its deposit did not land: its authorisation was closed on-chain and the budget credited back";
    }
  }
  await finish(room, doc.txnId, ["authorizing", "authorized"], { status: "failed", reason: "settlement_failed", detail });
}
