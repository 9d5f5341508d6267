/**
 * The ledger's writes that are not a payment's own: the indexer's confirmations and swaps, and an agent's entries
 * following it to a new owner. A payment's entry and its phase are written by src/payments/phases.ts only.
 */
import type { AnyBulkWriteOperation, Collection, ObjectId } from "mongodb";
import type { PaymentDoc } from "./documents";

export class LedgerWriter {
  constructor(private readonly payments: Collection<PaymentDoc>) {}

  /** Sets who owns entry `txnId` (its agent's owner, once known): never its phase (src/payments/phases.ts). */
  async setOwner(txnId: string, ownerAddress: string | null): Promise<void> {
    await this.payments.updateOne({ txnId }, { $set: { ownerAddress } });
  }

  /** Every entry of an agent follows it to a new owner. */
  async reassignOwner(agentAddress: string, ownerAddress: string): Promise<void> {
    await this.payments.updateMany({ agentAddress }, { $set: { ownerAddress } });
  }

  // ---------------------------------------------------------------- the indexer's writes

  /**
   * Marks entries confirmed at `blockNumber` (unless already confirmed at that block or later), and records swaps and
   * credits the service has not written itself. Answers how many entries changed.
   */
  async confirm(
    confirmed: { id: ObjectId; blockNumber: number }[],
    swaps: { paymentId: string; policyAddress: string; swap: NonNullable<PaymentDoc["swap"]> }[],
    credits: { paymentId: string; policyAddress: string; txHash: string }[] = [],
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
      // A ceiling's entry by its paymentId, a deposit's by the entry that made it.
      ...credits.map(({ paymentId, policyAddress, txHash }) => ({
        updateMany: {
          filter: {
            policyAddress,
            $and: [
              { $or: [{ paymentId }, { "channel.depositPaymentId": paymentId }] },
              { $or: [{ creditTxHash: { $exists: false } }, { creditTxHash: null }] },
            ],
          },
          update: { $set: { creditTxHash: txHash } },
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
