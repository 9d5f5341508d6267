/** API keys: 32 random bytes with prefix sk_, shown once, stored as SHA-256. Two roles: agent and owner. */
import { createHash, randomBytes } from "node:crypto";
import type { Collection } from "mongodb";
import type { ApiKeyDoc } from "../store/documents";

export type Principal =
  | { role: "agent"; agentAddress: string; keyPrefix: string }
  | { role: "owner"; ownerAddress: string; keyPrefix: string }
  | { role: "registrar" };

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** What may be shown of a key after creation: enough to tell keys apart, nothing to use. */
export function maskKey(prefix: string): string {
  return `${prefix}…`;
}

export class KeyService {
  constructor(private readonly keys: Collection<ApiKeyDoc>) {}

  /** Issues a key and returns it in clear: the only time it exists outside the caller. */
  async issue(doc: { role: "agent"; agentAddress: string } | { role: "owner"; ownerAddress: string; expiresAt: Date }): Promise<string> {
    const key = `sk_${randomBytes(32).toString("hex")}`;
    await this.keys.insertOne({ ...doc, hash: hashKey(key), prefix: key.slice(0, 9), createdAt: new Date() });
    return key;
  }

  /** Revokes every live key of an agent, or of an owner; the number revoked. They answer 401 at once. */
  async revokeAll(who: { agentAddress: string } | { ownerAddress: string }): Promise<number> {
    const filter =
      "agentAddress" in who
        ? { role: "agent" as const, agentAddress: who.agentAddress }
        : { role: "owner" as const, ownerAddress: who.ownerAddress };
    const r = await this.keys.updateMany({ ...filter, revokedAt: { $exists: false } }, { $set: { revokedAt: new Date() } });
    return r.modifiedCount;
  }

  /** The principal a key stands for, or null when it is unknown, revoked or expired. */
  async resolve(key: string): Promise<Principal | null> {
    if (!/^sk_[0-9a-f]{64}$/.test(key)) return null;
    const doc = await this.keys.findOne({ hash: hashKey(key) });
    if (!doc || doc.revokedAt) return null;
    if (doc.expiresAt && doc.expiresAt.getTime() <= Date.now()) return null;
    if (doc.role === "agent" && doc.agentAddress) return { role: "agent", agentAddress: doc.agentAddress, keyPrefix: doc.prefix };
    if (doc.role === "owner" && doc.ownerAddress) return { role: "owner", ownerAddress: doc.ownerAddress, keyPrefix: doc.prefix };
    return null;
  }
}
