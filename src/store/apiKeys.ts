/** The one write that revokes API keys (KeyService.revokeAll, and a hand-over in store/owners.ts). */
import type { Collection } from "mongodb";
import type { ApiKeyDoc } from "./documents";

/** Per keys collection, those told of every revocation written through it in this process. */
const revocationListeners = new WeakMap<Collection<ApiKeyDoc>, Set<() => void>>();

/**
 * Tells `listener` of every revocation this process writes to `keys`, once it is written (KeyService: its memory of
 * key lookups is forgotten, so a key revoked here, by any path, a hand-over the indexer applies included, is refused
 * here at once).
 */
export function onKeysRevoked(keys: Collection<ApiKeyDoc>, listener: () => void): void {
  let listeners = revocationListeners.get(keys);
  if (!listeners) revocationListeners.set(keys, (listeners = new Set()));
  listeners.add(listener);
}

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
  if (r.modifiedCount > 0) for (const told of revocationListeners.get(keys) ?? []) told();
  return r.modifiedCount;
}
