/** Reads of the batch-settlement channels collection that more than the payment's room needs. */
import type { Collection } from "mongodb";
import type { ChannelDoc } from "./documents";

/** USDC the agent's open channels hold beyond what their vouchers charged (refundable), base units. */
export async function heldInChannels(channels: Collection<ChannelDoc>, agentAddress: string): Promise<bigint> {
  const open = await channels.find({ agentAddress, status: "open" }).toArray();
  return open.reduce((n, c) => n + (BigInt(c.balance) > BigInt(c.charged) ? BigInt(c.balance) - BigInt(c.charged) : 0n), 0n);
}
