/** The one write that revokes API keys (KeyService.revokeAll, and a hand-over in store/owners.ts). */
import type { Collection } from "mongodb";
import type { ApiKeyDoc } from "./documents";

/** Revokes every live key of an agent, or of an owner (only those issued before `issuedBefore`, if given); how many. */
export async function revokeLiveKeys(
  keys: Collection<ApiKeyDoc>,
  who: { agentAddress: string } | { ownerAddress: string },
  issuedBefore?: Date,
): Promise<number> {
  const filter =
    "agentAddress" in who
      ? { role: "agent" as const, agentAddress: who.agentAddress }
      : { role: "owner" as const, ownerAddress: who.ownerAddress };
  const r = await keys.updateMany(
    { ...filter, ...(issuedBefore ? { createdAt: { $lt: issuedBefore } } : {}), revokedAt: { $exists: false } },
    { $set: { revokedAt: new Date() } },
  );
  return r.modifiedCount;
}
