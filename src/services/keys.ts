/**
 * API keys: 32 random bytes with prefix sk_, shown once, stored as an HMAC-SHA256 under a key derived from
 * WALLET_ENCRYPTION_KEY (not in the database), so a database write alone cannot make a key that works. Two roles:
 * agent and owner.
 */
import { createHmac, hkdfSync, randomBytes } from "node:crypto";
import { KEYS_REVOKED, onKeysRevoked, revokeLiveKeys } from "../store/apiKeys";
import { ChangeMark, within } from "../store/changeMarks";
import type { Principal } from "../principal";
import type { Store } from "../store";
import type { ApiKeyDoc } from "../store/documents";

const hashKeys = new Map<string, Buffer>();

/** What the store keeps of `key`: its HMAC under `secret` (WALLET_ENCRYPTION_KEY), never the key. */
export function hashKey(key: string, secret: string): string {
  let k = hashKeys.get(secret);
  if (!k) {
    k = Buffer.from(hkdfSync("sha256", secret, "", "spendgate api key hashes v1", 32));
    if (hashKeys.size > 16) hashKeys.clear();
    hashKeys.set(secret, k);
  }
  return createHmac("sha256", k).update(key).digest("hex");
}

/** What may be shown of a key after creation: enough to tell keys apart, nothing to use. */
export function maskKey(prefix: string): string {
  return `${prefix}…`;
}

/** How many looked-up keys an instance remembers for reads; past it the oldest are forgotten. */
const CACHE_ENTRIES = 10_000;
const KEY_FORMAT = /^sk_[0-9a-f]{64}$/;

interface CachedKey {
  principal: Principal;
  /** The key's own expiry (owner keys), ms. */
  expiresAt: number | null;
  /** When this lookup read the store, ms. */
  readAt: number;
  /** The revocation mark's epoch when it did (ChangeMark). */
  epoch: number;
}

/**
 * The longest a remembered lookup may stand in for the store's for a payment (docs/contracts.md, "A revoked API key"): a key revoked on
 * another instance stops paying within it (at once on the instance that revoked it), whatever API_KEY_CACHE_MS says.
 * Past it, a lookup stands for a payment while the store's revocation mark, read at most that long ago, has not moved
 * since the lookup (store/changeMarks.ts): one read of the mark for every key, instead of one read a key.
 */
export const PAYING_KEY_MEMORY_MS = 1_000;

/**
 * The longest a lookup stands for payments on the revocation mark, from its own read: a key revoked by a write that did
 * not move the mark (by hand in the database, or by an instance that stopped between the revocation and the mark's
 * move) stops paying within it.
 */
export const PAYING_KEY_LONGEST_MS = 10_000;

/**
 * What a lookup is for: `fresh` reads the store; `read` may be answered by a lookup made here within `cacheMs` (a
 * request that changes nothing); `pay` by one within PAYING_KEY_MEMORY_MS as well, or one the revocation mark says no
 * revocation came after since (a payment).
 */
export type KeyUse = "fresh" | "read" | "pay";

export interface KeyCacheOptions {
  /** How long a lookup may answer a read-only request without reading the store again (0: never). */
  cacheMs?: number;
  clock?: () => number;
}

/**
 * Keys, and a short memory of looked-up keys (`lookup`). A key revoked on this instance is refused by every request at
 * once; one revoked on another instance sharing the store is refused by payments within PAYING_KEY_MEMORY_MS, by reads
 * within `cacheMs`, and at once by every other request that changes something (they always read the store).
 */
export class KeyService {
  private readonly cache = new Map<string, CachedKey>();
  /** Moves on every revocation here: a lookup that began before one is not remembered. */
  private generation = 0;
  private readonly cacheMs: number;
  /** How long a payment stands on a lookup's own read: PAYING_KEY_MEMORY_MS, or cacheMs when shorter. */
  private readonly payingMs: number;
  private readonly now: () => number;
  /** Every instance's revocations (store/changeMarks.ts): what a payment's lookup past PAYING_KEY_MEMORY_MS stands on. */
  private readonly revocations: ChangeMark;

  constructor(
    private readonly store: Pick<Store, "apiKeys" | "collection">,
    /** WALLET_ENCRYPTION_KEY: the secret key hashes are made under. */
    private readonly hashSecret: string,
    opts: KeyCacheOptions = {},
  ) {
    this.cacheMs = opts.cacheMs ?? 0;
    this.payingMs = Math.min(this.cacheMs, PAYING_KEY_MEMORY_MS);
    this.now = opts.clock ?? Date.now;
    // Read at most as long ago as a lookup may stand on its own: a shorter cacheMs bounds payments as before.
    this.revocations = new ChangeMark(store, KEYS_REVOKED, {
      maxAgeMs: this.payingMs || PAYING_KEY_MEMORY_MS,
      longestMs: PAYING_KEY_LONGEST_MS,
      now: this.now,
    });
    // Whatever revokes a key in this process (a rotation here, a hand-over the indexer applies): forgotten at once.
    onKeysRevoked(store.apiKeys, () => this.forgetAll());
  }

  private get keys() {
    return this.store.apiKeys;
  }

  /** Issues a key and returns it in clear: the only time it exists outside the caller. */
  async issue(doc: { role: "agent"; agentAddress: string } | { role: "owner"; ownerAddress: string; expiresAt: Date }): Promise<string> {
    const key = `sk_${randomBytes(32).toString("hex")}`;
    await this.keys.insertOne({ ...doc, hash: hashKey(key, this.hashSecret), prefix: key.slice(0, 9), createdAt: new Date() });
    return key;
  }

  /**
   * Revokes every live key of an agent, or of an owner; the number revoked. They answer 401 at once here, and on other
   * instances to payments within PAYING_KEY_MEMORY_MS, to reads within `cacheMs`, to anything else at once.
   */
  async revokeAll(who: { agentAddress: string } | { ownerAddress: string }): Promise<number> {
    this.forgetAll();
    try {
      return await revokeLiveKeys(this.store, who);
    } finally {
      // Lookups that read the store while the update ran may have seen the key live.
      this.forgetAll();
    }
  }

  /** The principal a key stands for, read from the store; null when it is unknown, revoked or expired. */
  async resolve(key: string): Promise<Principal | null> {
    return (await this.lookup(key, "fresh"))?.principal ?? null;
  }

  /**
   * The same, but for `use` a lookup of this key made here recently enough may answer instead of the store (then
   * `remembered` is true, and `age` says how long ago it read the store): see KeyUse and the class comment.
   */
  async lookup(key: string, use: KeyUse): Promise<{ principal: Principal; remembered: boolean; age: number } | null> {
    if (!KEY_FORMAT.test(key)) return null;
    const hash = hashKey(key, this.hashSecret);
    if (use !== "fresh") {
      const hit = this.cache.get(hash);
      const now = this.now();
      const memory = use === "pay" ? this.payingMs : this.cacheMs;
      if (hit && (hit.expiresAt === null || hit.expiresAt > now)) {
        // (A clock that went back since the lookup makes it too old.)
        if (within(now, hit.readAt, memory)) return { principal: hit.principal, remembered: true, age: now - hit.readAt };
        // A payment past that: while no key was revoked anywhere since the lookup (the mark read at most
        // PAYING_KEY_MEMORY_MS ago), for at most PAYING_KEY_LONGEST_MS; its age is then the mark's.
        const confirmed = use === "pay" && this.cacheMs > 0 ? await this.revocations.confirmed(hit.epoch, hit.readAt) : null;
        if (confirmed !== null && this.cache.get(hash) === hit) {
          return { principal: hit.principal, remembered: true, age: Math.max(0, this.now() - Math.max(confirmed, hit.readAt)) };
        }
      }
    }
    const [generation, readAt, epoch] = [this.generation, this.now(), this.revocations.current()];
    const doc = await this.keys.findOne({ hash });
    const principal = doc && !doc.revokedAt ? principalOf(doc) : null;
    const expiresAt = doc?.expiresAt ? doc.expiresAt.getTime() : null;
    if (!principal || (expiresAt !== null && expiresAt <= this.now())) {
      this.cache.delete(hash);
      return null;
    }
    if (this.cacheMs > 0 && generation === this.generation) {
      this.cache.delete(hash); // re-inserted last: the oldest lookups are the first forgotten
      this.cache.set(hash, { principal, expiresAt, readAt, epoch });
      if (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    }
    return { principal, remembered: false, age: 0 };
  }

  /** Forgets every remembered lookup: after a revocation written to the store by other code (a hand-over). */
  forgetAll(): void {
    this.generation++;
    this.cache.clear();
  }
}

function principalOf(doc: ApiKeyDoc): Principal | null {
  if (doc.role === "agent" && doc.agentAddress)
    return Object.freeze({ role: "agent", agentAddress: doc.agentAddress, keyPrefix: doc.prefix });
  if (doc.role === "owner" && doc.ownerAddress)
    return Object.freeze({ role: "owner", ownerAddress: doc.ownerAddress, keyPrefix: doc.prefix });
  return null;
}
