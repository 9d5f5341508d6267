/**
 * The ledger writer: the one place that builds payment documents (`txn_...` entries) and inserts or updates them, so
 * their shape lives here. Everything else reads `store.payments` and writes through this.
 */
import type { AnyBulkWriteOperation, Collection, ObjectId, UpdateResult } from "mongodb";
import type { PaymentDoc } from "./documents";

/** What an entry knows before any value moves: whose payment, to whom, why. */
export type LedgerBase = Pick<
  PaymentDoc,
  "agentAddress" | "ownerAddress" | "policyAddress" | "merchant" | "serviceUrl" | "currency" | "intent" | "approvalId" | "idempotencyScope"
>;

/** The fields a write may change: never the entry's id or when it was created. */
export type LedgerUpdate = Partial<Omit<PaymentDoc, "_id" | "txnId" | "createdAt">>;

/** What a new entry sets beyond its base: its amount, status and phase, and whatever it already knows. */
export type LedgerFields = Pick<PaymentDoc, "amount" | "status" | "phase"> & LedgerUpdate;

/** A new entry: `fields` over an entry nothing has happened to yet (no transaction, not on-chain). */
export function ledgerEntry(txnId: string, base: LedgerBase, fields: LedgerFields, now = new Date()): PaymentDoc {
  const { idempotencyScope, ...rest } = base;
  return {
    txnId,
    ...rest,
    ...(idempotencyScope ? { idempotencyScope } : {}),
    reason: null,
    paymentId: null,
    txHash: null,
    authorizeTxHash: null,
    releaseTxHash: null,
    payTo: null,
    validBefore: null,
    createdAt: now,
    updatedAt: now,
    settledAt: null,
    onchain: { confirmed: false, blockNumber: null },
    ...fields,
  };
}

export class LedgerWriter {
  constructor(private readonly payments: Collection<PaymentDoc>) {}

  async insert(entry: PaymentDoc): Promise<void> {
    await this.payments.insertOne(entry);
  }

  /** Writes `entry` over the entry `txnId` already has, keeping when that one was created. */
  async rewrite(entry: PaymentDoc): Promise<void> {
    const { createdAt: _keep, _id: _same, ...rest } = entry;
    await this.payments.updateOne({ txnId: entry.txnId }, { $set: rest });
  }

  /** Sets `set` on entry `txnId`, creating it (with `createdAt`) when there is none yet. */
  upsert(txnId: string, set: LedgerUpdate, createdAt: Date): Promise<UpdateResult> {
    return this.payments.updateOne({ txnId }, { $set: set, $setOnInsert: { txnId, createdAt } }, { upsert: true });
  }

  /**
   * Sets `set` on entry `txnId`. A final entry is only amended by the instance that finished it: a run that stalled and
   * wakes up after another instance finished its payment (failover.ts) cannot put it back in flight.
   */
  async update(txnId: string, set: LedgerUpdate): Promise<void> {
    const open = [{ phase: { $ne: "done" as const } }, ...(set.instanceId ? [{ instanceId: set.instanceId }] : [])];
    await this.payments.updateOne({ txnId, $or: open }, { $set: set });
  }

  /** update() that answers the entry as written, or null when there is none (for the alert of its final write). */
  finish(txnId: string, set: LedgerUpdate): Promise<PaymentDoc | null> {
    return this.payments.findOneAndUpdate({ txnId }, { $set: set }, { returnDocument: "after" });
  }

  /**
   * Takes an in-flight entry for recovery when it is still as `seen` (same phase and lease): of several recovering
   * instances exactly one gets it.
   */
  async claim(seen: PaymentDoc, lease: Pick<PaymentDoc, "leaseUntil" | "instanceId">): Promise<boolean> {
    const claimed = await this.payments.findOneAndUpdate(
      { txnId: seen.txnId, phase: seen.phase, leaseUntil: seen.leaseUntil ?? { $exists: false } },
      { $set: lease },
    );
    return claimed !== null;
  }

  /**
   * Undoes an entry whose commit failed (a lease was lost) before anything was sent: a new entry goes, an approved
   * one goes back to waiting for its approval.
   */
  async undoUncommitted(txnId: string, wasNew: boolean): Promise<void> {
    const unsent = { txnId, phase: "authorizing" as const, authorizeTxHash: null };
    if (wasNew) await this.payments.deleteOne(unsent);
    else await this.payments.updateOne(unsent, { $set: { status: "pending", phase: "quoted", paymentId: null } });
  }

  /** Drops the entries an earlier run under an Idempotency-Key wrote and never committed (nothing was sent for them). */
  async dropUncommitted(idempotencyScope: string): Promise<void> {
    await this.payments.deleteMany({ idempotencyScope, phase: "authorizing", authorizeTxHash: null });
  }

  /** Every entry of an agent follows it to a new owner. */
  async reassignOwner(agentAddress: string, ownerAddress: string): Promise<void> {
    await this.payments.updateMany({ agentAddress }, { $set: { ownerAddress } });
  }

  // ---------------------------------------------------------------- the indexer's writes

  /**
   * Marks entries confirmed at `blockNumber` (unless already confirmed at that block or later), and records swaps the
   * service has not written itself. Answers how many entries changed.
   */
  async confirm(
    confirmed: { id: ObjectId; blockNumber: number }[],
    swaps: { paymentId: string; policyAddress: string; swap: NonNullable<PaymentDoc["swap"]> }[],
  ): Promise<number> {
    const ops: AnyBulkWriteOperation<PaymentDoc>[] = [
      ...confirmed.map(({ id, blockNumber }) => ({
        updateOne: {
          filter: {
            _id: id,
            $or: [{ "onchain.confirmed": { $ne: true } }, { "onchain.blockNumber": null }, { "onchain.blockNumber": { $lt: blockNumber } }],
          },
          update: { $set: { onchain: { confirmed: true, blockNumber } } },
        },
      })),
      ...swaps.map(({ paymentId, policyAddress, swap }) => ({
        updateOne: {
          filter: { paymentId, policyAddress, $or: [{ swap: { $exists: false } }, { swap: null }] },
          update: { $set: { swap } },
        },
      })),
    ];
    if (ops.length === 0) return 0;
    return (await this.payments.bulkWrite(ops, { ordered: false })).modifiedCount;
  }

  /** Sets an entry's `onchain` (only while it is unconfirmed, with `unconfirmedOnly`); whether it changed. */
  async setOnchain(id: ObjectId, onchain: PaymentDoc["onchain"], unconfirmedOnly = false): Promise<boolean> {
    const filter = unconfirmedOnly ? { _id: id, "onchain.confirmed": { $ne: true } } : { _id: id };
    return (await this.payments.updateOne(filter, { $set: { onchain } })).modifiedCount === 1;
  }
}
