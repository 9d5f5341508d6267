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
 * Marks that agent `agentAddress`'s policy changed (a pause, a policy update it relayed): every instance's payment path
 * reads the policy again before its next payment, without waiting for the indexer to see the event.
 */
export async function policyChanged(store: { collection: Store["collection"] }, agentAddress: string): Promise<void> {
  await store
    .collection("policyChanges")
    .updateOne({ agentAddress }, { $inc: { seq: 1 }, $set: { updatedAt: new Date() } }, { upsert: true });
}
