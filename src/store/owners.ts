/** An agent's hand-over as the store keeps it: the agent, its history and its open approvals follow the new owner. */
import { revokeLiveKeys } from "./apiKeys";
import type { Store } from "./index";
import { LedgerWriter } from "./ledger";

/**
 * Moves agent `agentAddress` to `ownerAddress` (the old owner's keys lose it at once). The agent's keys are revoked
 * when its owner changes: one the previous owner took (POST /agents/:address/key) before handing over would otherwise
 * go on paying under the new owner's policy; the new owner issues the agent a key of its own. Revoked before the agent
 * moves (a crash between the two leaves the move to be applied again, by the indexer), and only keys older than this
 * call: one the new owner issued after another application of the same hand-over stays. Answers whether the owner
 * changed.
 */
export async function reassignAgentOwner(store: Store, agentAddress: string, ownerAddress: string): Promise<boolean> {
  const startedAt = new Date();
  const agent = await store.agents.findOne({ address: agentAddress }, { projection: { ownerAddress: 1 } });
  const changes = agent !== null && agent.ownerAddress !== ownerAddress;
  if (changes) await revokeLiveKeys(store, { agentAddress }, startedAt);
  await store.agents.updateOne({ address: agentAddress }, { $set: { ownerAddress, linkedAt: new Date() } });
  await new LedgerWriter(store.payments).reassignOwner(agentAddress, ownerAddress);
  await store.approvals.updateMany({ agentAddress }, { $set: { ownerAddress } });
  await store.owners.updateOne(
    { address: ownerAddress },
    { $setOnInsert: { address: ownerAddress, createdAt: new Date(), lastSignInAt: new Date(0) } },
    { upsert: true },
  );
  return changes;
}

/**
 * An approval (and its ledger entry) written by a payment that read the agent before a hand-over follows the agent:
 * the hand-over moves the agent first, then its records, so read after these writes, either the agent already has its
 * new owner or the move comes after them. Answers the owner the approval now has.
 */
export async function followAgentOwner(
  store: Store,
  written: { agentAddress: string; approvalId: string; txnId: string; ownerAddress: string | null },
): Promise<string | null> {
  const agent = await store.agents.findOne({ address: written.agentAddress }, { projection: { ownerAddress: 1 } });
  if (!agent || agent.ownerAddress === written.ownerAddress) return written.ownerAddress;
  await store.approvals.updateOne({ approvalId: written.approvalId }, { $set: { ownerAddress: agent.ownerAddress } });
  await new LedgerWriter(store.payments).setOwner(written.txnId, agent.ownerAddress);
  return agent.ownerAddress;
}
