/**
 * The facilitator's record of settlements broadcast and not yet confirmed (@x402/core's PendingSettlementStore), kept in
 * the service's MongoDB: a settle retried on any instance finds the transaction another one broadcast, and reconciles
 * against it instead of broadcasting a second (the stock in-memory store lives in one process). Entries expire like
 * the stock ones: a TTL index removes them, and an entry past its time is not read even before it goes.
 */
import { createHash } from "node:crypto";
import { PENDING_SETTLEMENT_TTL_MS, type PendingSettlementStore } from "@x402/core/facilitator";
import type { Collection } from "mongodb";
import type { PendingSettlementDoc } from "../store/documents";

/** Its collection (src/store/index.ts declares its indexes: the key, unique, and a TTL on expiresAt). */
export const PENDING_SETTLEMENTS = "pendingSettlements";

const keyOf = (key: string) => createHash("sha256").update(key).digest("hex");

export class MongoPendingSettlementStore implements PendingSettlementStore {
  constructor(
    private readonly c: Collection<PendingSettlementDoc>,
    private readonly ttlMs = PENDING_SETTLEMENT_TTL_MS,
  ) {}

  async get(key: string): Promise<string | undefined> {
    const doc = await this.c.findOne({ key: keyOf(key), expiresAt: { $gt: new Date() } });
    return doc?.txHash;
  }

  async set(key: string, txHash: string): Promise<void> {
    await this.c.updateOne({ key: keyOf(key) }, { $set: { txHash, expiresAt: new Date(Date.now() + this.ttlMs) } }, { upsert: true });
  }

  async delete(key: string): Promise<void> {
    await this.c.deleteOne({ key: keyOf(key) });
  }
}
