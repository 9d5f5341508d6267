/**
 * Closing a batch-settlement channel: the seller is asked for a cooperative refund of what its vouchers did not
 * charge (the stock client's refund: a zero-charge voucher with a refund request, which the seller's facilitator
 * redeems with refundWithSignature; the USDC goes back to the wallet, the payer, and nowhere else), then each deposit
 * is credited back on-chain (creditChannel: the wallet gives the windows exactly what came back, once). Run under the
 * agent's lock, so no voucher is signed meanwhile. Money only ever returns to the wallet, so the agent may close its
 * own channels as well as its owner.
 */
import { refundChannel, type ClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { fetch as undiciFetch } from "undici";
import { fromBaseUnits } from "../../amounts";
import { appError, conflict, notFound } from "../../errors";
import { chargedWith, unsettledEntries } from "../../store/channels";
import type { AgentDoc } from "../../store/documents";
import type { ChannelDoc } from "../../store/channelDocuments";
import { sellerDispatcher } from "../../x402/buyer";
import { schemeSigner } from "./schemeSigner";
import type { Room } from "../context";
import { channelOnchain, creditDeposit, pendingWithdrawal } from "./channelState";
import { recordDoubts, settleDoubts, settledRead } from "./vouchers";

const ZERO_SALT = `0x${"0".repeat(64)}` as const;
const NO_AUTHORIZER = "0x0000000000000000000000000000000000000000" as const;

/** A channel as GET /agents/:address/channels shows it (USDC decimal strings). */
export function channelView(c: ChannelDoc, onchain?: { balance: bigint; totalClaimed: bigint }) {
  const balance = onchain?.balance ?? BigInt(c.balance);
  const charged = BigInt(c.charged);
  const deposited = c.deposits.reduce((n, d) => n + BigInt(d.amount), 0n);
  const credited = c.deposits.reduce((n, d) => n + BigInt(d.credited ?? 0), 0n);
  return {
    channelId: c.channelId,
    merchant: c.merchant,
    serviceUrl: c.serviceUrl,
    receiver: c.receiver,
    status: c.status,
    deposited: fromBaseUnits(deposited),
    balance: fromBaseUnits(balance),
    charged: fromBaseUnits(charged),
    claimed: onchain ? fromBaseUnits(onchain.totalClaimed) : null,
    held: fromBaseUnits(c.status === "open" && balance > charged ? balance - charged : 0n),
    credited: fromBaseUnits(credited),
    deposits: c.deposits.map((d) => ({
      paymentId: d.paymentId,
      transactionId: d.txnId,
      amount: fromBaseUnits(d.amount),
      credited: d.credited === null ? null : fromBaseUnits(d.credited),
    })),
    refunds: (c.refunds ?? []).map((r) => ({ amount: fromBaseUnits(r.amount), txHash: r.txHash, at: r.at.toISOString() })),
    updatedAt: c.updatedAt.toISOString(),
  };
}

export async function listChannels(room: Room, agent: AgentDoc) {
  const { store } = room.ctx;
  const docs = await store.channels.find({ agentAddress: agent.address }).sort({ updatedAt: -1 }).limit(100).toArray();
  const [onchain, entries] = await Promise.all([
    Promise.all(docs.map((c) => channelOnchain(room, c.channelId).catch(() => undefined))),
    unsettledEntries(store.payments, docs),
  ]);
  // Charged as the ledger has it: with the vouchers whose outcomes the channel's own charge does not carry yet.
  return { channels: docs.map((c, i) => channelView({ ...c, charged: chargedWith(c, entries).toString() }, onchain[i])) };
}

/** Refunds what channel `channelId` holds beyond its charges and credits every deposit back; the channel as left. */
export async function closeChannel(room: Room, agent: AgentDoc, channelId: string) {
  return withOwnChannel(room, agent, channelId, async (c, id) => {
    const before = await channelOnchain(room, id);
    let refund: { amount: bigint; txHash: string | null } | null = null;
    let refundError: string | null = null;
    if (before.balance > before.totalClaimed) {
      try {
        refund = await cooperativeRefund(room, agent, c);
      } catch (err) {
        refundError = (err as Error).message.slice(0, 300);
      }
    }
    const after = await channelOnchain(room, id);
    // A refund claims all the seller counted first: its claimed total is final, and settles the vouchers in doubt.
    const { left, credited } = await creditBack(room, id, after, refund, refund !== null);
    if (left.status !== "closed" && refundError) {
      throw appError(
        "upstream_error",
        `The seller refused the refund (${refundError}); the channel still holds ${fromBaseUnits(after.balance - BigInt(left.charged))} USDC. Nothing else changed. A forced withdrawal returns it: POST /agents/${agent.address}/channels/${id}/withdraw.`,
      );
    }
    return { ...channelView(left, after), refunded: fromBaseUnits(refund?.amount ?? 0n), creditedNow: fromBaseUnits(credited) };
  });
}

/**
 * After money came back to the wallet (a refund, a withdrawal): the channel's balance as the chain has it, then
 * creditChannel for every deposit not credited in full yet (nothing for a deposit whose money is still in the channel,
 * which stays counted), and the channel closed when nothing of the wallet's is left in it beyond its charges.
 */
async function creditBack(
  room: Room,
  id: string,
  after: { balance: bigint; totalClaimed: bigint },
  refund: { amount: bigint; txHash: string | null } | null,
  /** The seller can claim nothing more (a refund, a finished withdrawal): vouchers in doubt it did not claim were not counted. */
  final: boolean,
): Promise<{ left: ChannelDoc; credited: bigint }> {
  const { channels } = room.ctx.store;
  room.channelCopies.drop(id); // written below, not through a payment's copy
  const read = async () => {
    const doc = await channels.findOne({ channelId: id });
    if (!doc) throw new Error(`channel ${id} vanished`);
    return doc;
  };
  const { doubts } = await settledRead(room, await read(), read);
  const settled = settleDoubts(doubts, after.totalClaimed, final, final ? "the channel's final claim" : "its claim on-chain");
  const now = await read();
  await recordDoubts(room, now, settled);
  const entries = await unsettledEntries(room.ctx.store.payments, [now]);
  await channels.updateOne(
    { channelId: id, version: now.version },
    {
      $set: {
        balance: after.balance.toString(),
        // What the ledger has them charge, and those still in doubt.
        charged: chargedWith(now, entries).toString(),
        unsettled: (now.unsettled ?? []).filter((v) => !entries.has(v.txnId)),
        version: now.version + 1,
        updatedAt: new Date(),
      },
      ...(refund ? { $push: { refunds: { amount: refund.amount.toString(), txHash: refund.txHash, at: new Date() } } } : {}),
    },
  );
  let credited = 0n;
  for (const d of (await read()).deposits) {
    if (d.credited !== null && BigInt(d.credited) >= BigInt(d.amount)) continue;
    credited += await creditDeposit(room, await read(), d.paymentId);
  }
  const left = await read();
  if (after.balance <= after.totalClaimed || after.balance <= BigInt(left.charged)) {
    await channels.updateOne(
      { channelId: id, version: left.version },
      { $set: { status: "closed", version: left.version + 1, updatedAt: new Date() } },
    );
    return { left: await read(), credited };
  }
  return { left, credited };
}

/**
 * The wallet's forced withdrawal from a channel whose seller does not refund: the first call starts the channel
 * contract's timed withdrawal of everything unclaimed (the seller may still claim its vouchers meanwhile), a call
 * after the channel's withdraw delay finishes it and credits back what came back. Money only returns to the wallet.
 */
export async function withdrawChannel(room: Room, agent: AgentDoc, channelId: string) {
  const { ctx } = room;
  return withOwnChannel(room, agent, channelId, async (c, id) => {
    const pending = await pendingWithdrawal(room, id);
    const availableAt = (p: { initiatedAt: number }) => new Date((p.initiatedAt + c.config.withdrawDelay) * 1000).toISOString();
    if (pending.amount === 0n) {
      const before = await channelOnchain(room, id);
      if (before.balance <= before.totalClaimed) throw conflict(`Channel ${id} holds nothing unclaimed: nothing to withdraw.`);
      const receipt = await room.schemes.channelWithdrawal(agent.address, c.config, "start");
      await ctx.gas.charge(agent.ownerAddress, receipt);
      const started = await pendingWithdrawal(room, id);
      return { state: "started" as const, amount: fromBaseUnits(started.amount), availableAt: availableAt(started), txHash: receipt.hash };
    }
    const block = await ctx.chain.provider.getBlock("latest");
    if ((block?.timestamp ?? 0) < pending.initiatedAt + c.config.withdrawDelay) {
      throw conflict(
        `The withdrawal of ${fromBaseUnits(pending.amount)} USDC from channel ${id} can be finished from ${availableAt(pending)} on.`,
      );
    }
    const receipt = await room.schemes.channelWithdrawal(agent.address, c.config, "finish");
    await ctx.gas.charge(agent.ownerAddress, receipt);
    const after = await channelOnchain(room, id);
    const { left, credited } = await creditBack(room, id, after, null, true);
    return {
      state: "finished" as const,
      amount: fromBaseUnits(pending.amount),
      availableAt: availableAt(pending),
      txHash: receipt.hash,
      channel: channelView(left, after),
      creditedNow: fromBaseUnits(credited),
    };
  });
}

/** Runs `task` under the agent's lock with its channel `channelId` (lower-cased as `id`); 404 when it has none so. */
function withOwnChannel<T>(room: Room, agent: AgentDoc, channelId: string, task: (c: ChannelDoc, id: string) => Promise<T>): Promise<T> {
  const id = channelId.toLowerCase();
  const { channels } = room.ctx.store;
  return room.ctx.agentLock.run(agent.address, async () => {
    const read = () => channels.findOne({ channelId: id, agentAddress: agent.address });
    const stored = await read();
    if (!stored) throw notFound(`Channel ${channelId} of agent ${agent.address} not found.`);
    // Vouchers run without the agent's lock (channel.ts): one being sent is waited for, and the channel's version moves
    // before anything is asked of the seller, so a voucher from an older copy is refused its write and waits its turn.
    const { channel } = await settledRead(room, stored, read);
    room.channelCopies.drop(id);
    const { version } = channel;
    const moved = await channels.updateOne({ channelId: id, version }, { $set: { version: version + 1 } });
    if (moved.matchedCount !== 1) throw conflict("This agent's channel changed meanwhile (a payment); nothing was done. Retry.");
    return task({ ...channel, version: version + 1 }, id);
  });
}

/** The stock client's cooperative refund of everything not charged, signed by the wallet, through the seller rules. */
async function cooperativeRefund(room: Room, agent: AgentDoc, c: ChannelDoc): Promise<{ amount: bigint; txHash: string | null }> {
  const key = await room.ctx.wallets.signer(agent.signerAddress);
  const records = new Map<string, { chargedCumulativeAmount?: string; balance?: string }>([
    [c.channelId, { chargedCumulativeAmount: c.charged, balance: c.balance }],
  ]);
  const storage: ClientChannelStorage = {
    get: (k) => Promise.resolve(records.get(k)),
    set: (k, v) => Promise.resolve(void records.set(k, v)),
    delete: (k) => Promise.resolve(void records.delete(k)),
  };
  const dispatcher = sellerDispatcher(room.ctx.config.allowPrivateSellers);
  const guarded = ((url: string, init?: RequestInit) =>
    undiciFetch(url, {
      ...(init as object),
      dispatcher,
      redirect: "manual",
      signal: AbortSignal.timeout(room.ctx.config.sellerTimeoutMs),
    })) as unknown as typeof fetch;
  const signer = schemeSigner(agent.address, key, ZERO_SALT);
  const r = await refundChannel({ signer, storage, salt: ZERO_SALT, payerAuthorizer: NO_AUTHORIZER }, c.serviceUrl, { fetch: guarded });
  if (!r.success) throw new Error(r.errorReason ?? "refund not settled");
  return { amount: BigInt(r.amount ?? "0"), txHash: r.transaction || null };
}
