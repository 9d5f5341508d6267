/** Reads of the batch-settlement channels collection that more than the payment's room needs, and the policy mark. */
import type { Collection } from "mongodb";
import type { ChannelDoc } from "./documents";
import type { Store } from "./index";

/** USDC the agent's open channels hold beyond what their vouchers charged (refundable), base units. */
export async function heldInChannels(channels: Collection<ChannelDoc>, agentAddress: string): Promise<bigint> {
  const open = await channels.find({ agentAddress, status: "open" }).toArray();
  return open.reduce((n, c) => n + (BigInt(c.balance) > BigInt(c.charged) ? BigInt(c.balance) - BigInt(c.charged) : 0n), 0n);
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
