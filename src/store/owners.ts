/** An agent's hand-over as the store keeps it: the agent, its history and its open approvals follow the new owner. */
import type { Store } from "./index";
import { LedgerWriter } from "./ledger";

/** Moves agent `agentAddress` to `ownerAddress` (the old owner's keys lose it at once). */
export async function reassignAgentOwner(store: Store, agentAddress: string, ownerAddress: string): Promise<void> {
  await store.agents.updateOne({ address: agentAddress }, { $set: { ownerAddress, linkedAt: new Date() } });
  await new LedgerWriter(store.payments).reassignOwner(agentAddress, ownerAddress);
  await store.approvals.updateMany({ agentAddress }, { $set: { ownerAddress } });
  await store.owners.updateOne(
    { address: ownerAddress },
    { $setOnInsert: { address: ownerAddress, createdAt: new Date(), lastSignInAt: new Date(0) } },
    { upsert: true },
  );
}
