/**
 * What the chain says of a batch-settlement channel, and crediting its deposits back: the channel contract's balance
 * (deposits landed, less refunds and withdrawals; claims do not lower it), and the wallet's creditChannel, which
 * credits a deposit with what of the channel came back (and kills a deposit authorisation that never landed).
 */
import { Interface } from "ethers";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import type { ChannelDoc } from "../store/documents";
import type { Room } from "./context";

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
