/**
 * A payment's phases: the one table of them and of the moves allowed between them, and the one writer of a payment's
 * ledger entry. Every write names the phase it expects the entry to be in and is a compare-and-set on it (`filter
 * {txnId, phase: from}`): a write whose entry moved on meanwhile (recovery on another instance finished it) changes
 * nothing and says so. No other file writes a phase (test/payments/phases.test.ts checks the sources).
 *
 *   (none) ──insert──▶ quoted ──begin──▶ authorizing ──▶ authorized ──▶ done
 *      │                 │  ◀──undo───────┘   │                          ▲
 *      │                 └────────────────────┼──────────────────────────┤ (denied, expired, refused after approval)
 *      └──insert (a refusal, finished at once; a stray record: authorized)┘
 *
 * quoted: an approval waits for its owner (nothing signed). authorizing: signed, written down, committed to its leases;
 * the authorisation may be on its way to the chain. authorized: the chain authorised it; it may be paid. done: final.
 */
import type { Collection } from "mongodb";
import type { PaymentDoc, PaymentPhase, PaymentRecord } from "../store/documents";

export type { PaymentPhase };

/** The moves a payment's entry may make, by the phase it is in ("new": no entry yet). */
export const PHASES: Readonly<Record<PaymentPhase | "new", readonly PaymentPhase[]>> = {
  new: ["quoted", "authorizing", "authorized", "done"],
  quoted: ["authorizing", "done"],
  authorizing: ["authorizing", "authorized", "quoted", "done"],
  authorized: ["authorized", "done"],
  done: [],
};

/** The phases of a payment that may have moved or may still move value: recovery finishes them. */
export const IN_FLIGHT: readonly PaymentPhase[] = ["authorizing", "authorized"];

/** Whether an entry in phase `from` may be written with phase `to`. */
export function canMove(from: PaymentPhase | "new", to: PaymentPhase): boolean {
  return PHASES[from].includes(to);
}

function assertMove(from: readonly (PaymentPhase | "new")[], to: PaymentPhase): void {
  const bad = from.find((f) => !canMove(f, to));
  if (bad) throw new Error(`a payment cannot move from ${bad} to ${to}`);
}

/** What an entry knows before any value moves: whose payment, to whom, why. */
export type LedgerBase = Pick<
  PaymentDoc,
  | "agentAddress"
  | "network"
  | "ownerAddress"
  | "policyAddress"
  | "merchant"
  | "serviceUrl"
  | "currency"
  | "intent"
  | "approvalId"
  | "idempotencyScope"
>;

/** The fields a write may change besides its phase: never the entry's id, when it was created, or its phase. */
export type LedgerUpdate = Partial<Omit<PaymentRecord, "_id" | "txnId" | "createdAt" | "phase">>;

/** What a new entry sets beyond its base: its amount, status and phase, and whatever it already knows. */
export type LedgerFields = Pick<PaymentRecord, "amount" | "status" | "phase"> & LedgerUpdate;

/** A new entry: `fields` over an entry nothing has happened to yet (no transaction, not on-chain). Writes nothing. */
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
  } as PaymentDoc;
}

/** The writer of payments' ledger entries: every phase and every write of an entry in flight goes through it. */
export class PaymentLedger {
  /** Written as records (one shape for every phase); read back as the union, by phase. */
  private readonly payments: Collection<PaymentRecord>;

  constructor(payments: Collection<PaymentDoc>) {
    this.payments = payments as unknown as Collection<PaymentRecord>;
  }

  /** A new entry, in a phase a payment may start in. */
  async insert(entry: PaymentDoc): Promise<void> {
    assertMove(["new"], entry.phase);
    await this.payments.insertOne(entry);
  }

  /**
   * A new entry, only where no entry has its txnId (whatever the store's indexes): of two writers of one payment's
   * outcome (a voucher's run and the recovery that settled it) the first wins. Whether this one was written.
   */
  async insertOnce(entry: PaymentDoc): Promise<boolean> {
    assertMove(["new"], entry.phase);
    const { _id: _none, ...fields } = entry;
    const r = await this.payments.updateOne({ txnId: entry.txnId }, { $setOnInsert: fields as PaymentRecord }, { upsert: true });
    return r.upsertedCount === 1;
  }

  /**
   * Writes `entry` over entry `txnId` while it is still in phase `from`, keeping when it was created (an approval's
   * entry refused after all). Whether it was written.
   */
  async rewrite(entry: PaymentDoc, from: PaymentPhase): Promise<boolean> {
    assertMove([from], entry.phase);
    const { createdAt: _keep, _id: _same, ...rest } = entry;
    return (await this.payments.updateOne({ txnId: entry.txnId, phase: from }, { $set: rest })).modifiedCount === 1;
  }

  /**
   * The payment starts moving value: its entry is written "authorizing" with `set`. `quoted`: an approved payment,
   * whose entry moves from "quoted" (false when it is not there any more); otherwise a new entry is created (false when
   * one with this txnId exists already).
   */
  async begin(txnId: string, set: LedgerUpdate & Pick<PaymentDoc, "amount" | "status">, quoted: boolean, now: Date): Promise<boolean> {
    if (quoted) return this.move(txnId, ["quoted"], "authorizing", set);
    // Inserted only where no entry has this txnId (whatever the store's indexes).
    const r = await this.payments.updateOne(
      { txnId },
      { $setOnInsert: { ...set, txnId, phase: "authorizing", createdAt: now } as PaymentRecord },
      { upsert: true },
    );
    return r.upsertedCount === 1;
  }

  /** Writes `set` on entry `txnId` while it stays in phase `phase`; whether it was written. */
  async set(txnId: string, phase: PaymentPhase, set: LedgerUpdate): Promise<boolean> {
    return (await this.payments.updateOne({ txnId, phase }, { $set: set })).matchedCount === 1;
  }

  /** Moves entry `txnId` from one of `from` to `to` (not "done": see finish) with `set`; whether it moved. */
  async move(txnId: string, from: readonly PaymentPhase[], to: Exclude<PaymentPhase, "done">, set: LedgerUpdate): Promise<boolean> {
    assertMove(from, to);
    return (await this.payments.updateOne({ txnId, phase: { $in: [...from] } }, { $set: { ...set, phase: to } })).matchedCount === 1;
  }

  /** Moves entry `txnId` from one of `from` to "done" with `set`: the entry as written, or null when it was not there. */
  async finish(txnId: string, from: readonly PaymentPhase[], set: LedgerUpdate): Promise<PaymentDoc | null> {
    assertMove(from, "done");
    const done = await this.payments.findOneAndUpdate(
      { txnId, phase: { $in: [...from] } },
      { $set: { ...set, phase: "done" } },
      { returnDocument: "after" },
    );
    return done as PaymentDoc | null;
  }

  /**
   * Takes an in-flight entry for recovery when it is still as `seen` (same phase and lease): of several recovering
   * instances exactly one gets it.
   */
  async claim(seen: PaymentDoc, lease: Pick<PaymentRecord, "leaseUntil" | "instanceId">): Promise<boolean> {
    const claimed = await this.payments.findOneAndUpdate(
      { txnId: seen.txnId, phase: seen.phase, leaseUntil: seen.leaseUntil ?? { $exists: false } },
      { $set: lease },
    );
    return claimed !== null;
  }

  /** Shortens `instanceId`'s lease on entry `txnId` while it is still in flight (a recovery that could not finish it). */
  async shortenLease(txnId: string, instanceId: string, leaseUntil: Date): Promise<void> {
    await this.payments.updateOne({ txnId, phase: { $in: [...IN_FLIGHT] }, instanceId }, { $set: { leaseUntil } });
  }

  /**
   * Undoes an entry whose commit failed (a lease was lost) before anything was sent: a new entry goes, an approved
   * one goes back to waiting for its approval ("authorizing" -> "quoted").
   */
  async undoUncommitted(txnId: string, wasNew: boolean): Promise<void> {
    const unsent = { txnId, phase: "authorizing" as const, authorizeTxHash: null };
    if (wasNew) await this.payments.deleteOne(unsent);
    else await this.payments.updateOne(unsent, { $set: { status: "pending", phase: "quoted", paymentId: null } });
  }

  /** Undoes the entry of an approval request whose lock was lost once it was written, while it still waits (pending.ts). */
  async undoRequested(txnId: string): Promise<void> {
    await this.payments.deleteOne({ txnId, phase: "quoted", status: "pending" });
  }

  /** Drops the entries an earlier run under an Idempotency-Key wrote and never committed (nothing was sent for them). */
  async dropUncommitted(idempotencyScope: string): Promise<void> {
    await this.payments.deleteMany({ idempotencyScope, phase: "authorizing", authorizeTxHash: null });
  }
}
