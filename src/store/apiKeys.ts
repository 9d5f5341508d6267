/** The one write that revokes API keys (KeyService.revokeAll, and a hand-over in store/owners.ts). */
import type { Collection } from "mongodb";
import { moveMark } from "./changeMarks";
import type { ApiKeyDoc } from "./documents";
import type { Store } from "./index";

/** The change mark every revocation moves (store/changeMarks.ts): other instances' remembered lookups stop paying. */
export const KEYS_REVOKED = "apiKeys.revoked";

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

/**
 * Revokes every live key of an agent, or of an owner (only those issued before `issuedBefore`, if given); how many.
 * Then moves the revocation mark, even when nothing was left to revoke: a revocation done again after its writer
 * stopped between the two writes moves it all the same.
 */
export async function revokeLiveKeys(
  store: Pick<Store, "apiKeys" | "collection">,
  who: { agentAddress: string } | { ownerAddress: string },
  issuedBefore?: Date,
): Promise<number> {
  const keys = store.apiKeys;
  const filter =
    "agentAddress" in who
      ? { role: "agent" as const, agentAddress: who.agentAddress }
      : { role: "owner" as const, ownerAddress: who.ownerAddress };
  const r = await keys.updateMany(
    { ...filter, ...(issuedBefore ? { createdAt: { $lt: issuedBefore } } : {}), revokedAt: { $exists: false } },
    { $set: { revokedAt: new Date() } },
  );
  // A mark the store would not move fails the call (done again, it moves it; a hand-over the indexer applies again),
  // and other instances' memories of the keys stand for at most PAYING_KEY_LONGEST_MS meanwhile (services/keys.ts).
  await moveMark(store, KEYS_REVOKED);
  if (r.modifiedCount > 0) for (const told of revocationListeners.get(keys) ?? []) told();
  return r.modifiedCount;
}
