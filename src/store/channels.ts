/** Reads of the batch-settlement channels collection that more than the payment's room needs, and the policy mark. */
import type { Collection } from "mongodb";
import type { PaymentDoc } from "./documents";
import type { ChannelDoc } from "./channelDocuments";
import type { Store } from "./index";

/**
 * What channel `c` has charged with the outcomes of its unsettled vouchers (`entries`, their ledger entries by txnId):
 * the latest approved one's cumulative when it is past the channel's own charge. A voucher with no entry yet counts
 * for nothing here (src/payments/schemes/vouchers.ts settles it).
 */
export function chargedWith(c: ChannelDoc, entries: ReadonlyMap<string, Pick<PaymentDoc, "phase" | "status" | "channel">>): bigint {
  let charged = BigInt(c.charged);
  for (const v of c.unsettled ?? []) {
    const e = entries.get(v.txnId);
    const cumulative = e?.phase === "done" && e.status === "approved" && e.channel ? BigInt(e.channel.cumulative) : 0n;
    if (cumulative > charged) charged = cumulative;
  }
  return charged;
}

/** The ledger entries of the channels' unsettled vouchers, by txnId: one read, none when nothing is unsettled. */
export async function unsettledEntries(
  payments: Collection<PaymentDoc>,
  channels: readonly ChannelDoc[],
): Promise<Map<string, PaymentDoc>> {
  const ids = channels.flatMap((c) => (c.unsettled ?? []).map((v) => v.txnId));
  if (!ids.length) return new Map();
  const docs = await payments.find({ txnId: { $in: ids } }).toArray();
  return new Map(docs.map((d) => [d.txnId, d]));
}

/** USDC the agent's open channels hold beyond what their vouchers charged (refundable), base units. */
export async function heldInChannels(store: Pick<Store, "channels" | "payments">, agentAddress: string): Promise<bigint> {
  const open = await store.channels.find({ agentAddress, status: "open" }).toArray();
  const entries = await unsettledEntries(store.payments, open);
  return open.reduce((n, c) => {
    const charged = chargedWith(c, entries);
    return n + (BigInt(c.balance) > charged ? BigInt(c.balance) - charged : 0n);
  }, 0n);
}

/**
 * Marks that agent `agentAddress`'s policy changed (a pause, a policy update this service relayed, or one the indexer
 * saw on-chain): its `policySeq` moves, so every instance's payment path, which reads the agent's document anyway,
 * reads the policy again before its next payment, without waiting for the indexer to see the event.
 */
export async function policyChanged(store: Pick<Store, "agents" | "collection">, agentAddress: string): Promise<void> {
  await store.agents.updateOne({ address: agentAddress }, { $inc: { policySeq: 1 } });
  // The mark instances of the release before this one read (a `policyChanges` document per agent), kept moving so a
  // rolling upgrade's older instances still see the change; nothing of this release reads it.
  await store
    .collection("policyChanges")
    .updateOne({ agentAddress }, { $inc: { seq: 1 }, $set: { updatedAt: new Date() } }, { upsert: true });
}
