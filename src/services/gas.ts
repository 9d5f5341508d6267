/**
 * The operator pays the gas of every transaction it relays (policy deploys and updates, pauses, withdrawals, blocked
 * records, payment authorisations and releases). Each is charged to the owner of the agent it was for, per UTC day,
 * against OWNER_GAS_ALLOWANCE_GWEI: past it, what the owner's agents ask of the operator is refused with 429 (the
 * kill switch, withdrawals and hand-overs are never refused: they protect the owner), so nobody drains the operator.
 *
 * The check before a payment reads the owner's total as the store last answered it here (a read, or this instance's
 * own charge, which answers the new total) when that answer is less than USAGE_FRESH_MS old, or USAGE_HEADROOM_MS while
 * it leaves more than half the allowance: a busy owner's payments then check without a store read. An answer's age
 * counts from when its command was sent, and a late answer never replaces a newer total (remember). What other
 * instances charged since that answer can go past the allowance by at most what they charge in USAGE_FRESH_MS, or by
 * what they charge beyond half the allowance in USAGE_HEADROOM_MS, once; it is the operator's gas, and the next check
 * sees it.
 */
import type { TransactionReceipt } from "ethers";
import type { Collection } from "mongodb";
import type { Config } from "../config";
import { appError } from "../errors";
import type { Store } from "../store";
import { within } from "../store/changeMarks";

export interface GasUsageDoc {
  ownerAddress: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  gasUsed: number;
  /** gasUsed × effective gas price, in gwei. */
  costGwei: number;
  transactions: number;
  updatedAt: Date;
}

const today = (now = new Date()) => now.toISOString().slice(0, 10);

/** What a mined transaction cost the operator, in gas and gwei. */
export function costOf(receipt: Pick<TransactionReceipt, "gasUsed" | "gasPrice">): { gasUsed: number; costGwei: number } {
  return { gasUsed: Number(receipt.gasUsed), costGwei: Number(receipt.gasUsed * (receipt.gasPrice ?? 0n)) / 1e9 };
}

/** How old the store's last answer of an owner's total may be for the check before a payment (see above). */
const USAGE_FRESH_MS = 1_000;
/** How old it may be while it leaves more than half the allowance (see above). */
const USAGE_HEADROOM_MS = 10_000;

export class GasMeter {
  /** Per owner, the day's total as the store last answered it here, and when (this.now()). */
  private readonly known = new Map<string, { day: string; costGwei: number; at: number }>();

  private readonly usageDocs: Collection<GasUsageDoc>;

  constructor(
    store: Store,
    private readonly config: Pick<Config, "ownerGasAllowanceGwei">,
    /** A monotonic clock, ms. */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.usageDocs = store.collection<GasUsageDoc>("gasUsage");
  }

  /**
   * Remembers the day's total as a store command answered it, `at` the time the command was sent (this.now()): the
   * total then was at most its answer. A day's total only grows, so an answer that arrives after a newer one (a read
   * sent before this instance's own charge, answered after it) never lowers it nor makes it look younger: of the two,
   * the higher total and the later start are kept, and the total at that start was at most that total still.
   */
  private remember(ownerAddress: string, day: string, costGwei: number, at: number): void {
    const k = this.known.get(ownerAddress);
    if (k && k.day === day) {
      costGwei = Math.max(costGwei, k.costGwei);
      at = Math.max(at, k.at);
    } else if (this.known.size >= 10_000) this.known.clear();
    this.known.set(ownerAddress, { day, costGwei, at });
  }

  /** Today's operator gas for an owner's agents, and what is left of the allowance. */
  async usage(ownerAddress: string) {
    const day = today();
    const sent = this.now();
    const doc = await this.usageDocs.findOne({ ownerAddress, day });
    const costGwei = doc?.costGwei ?? 0;
    this.remember(ownerAddress, day, costGwei, sent);
    const allowanceGwei = this.config.ownerGasAllowanceGwei;
    return {
      ownerAddress,
      day,
      gasUsed: doc?.gasUsed ?? 0,
      costGwei,
      transactions: doc?.transactions ?? 0,
      allowanceGwei,
      remainingGwei: Math.max(0, allowanceGwei - costGwei),
    };
  }

  /** Throws 429 `gas_allowance_exceeded` (Retry-After: the next UTC day) once the owner's allowance is spent. */
  async check(ownerAddress: string | null): Promise<void> {
    if (!ownerAddress) return;
    const k = this.known.get(ownerAddress);
    const allowance = this.config.ownerGasAllowanceGwei;
    if (k && k.day === today() && k.costGwei < allowance) {
      // (An injected clock that went back makes it too old: the total is read again.)
      const now = this.now();
      if (within(now, k.at, USAGE_FRESH_MS) || (within(now, k.at, USAGE_HEADROOM_MS) && k.costGwei * 2 < allowance)) return;
    }
    const u = await this.usage(ownerAddress);
    if (u.costGwei < u.allowanceGwei) return;
    const now = new Date();
    const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    throw appError(
      "gas_allowance_exceeded",
      `The operator gas allowance of this owner's agents for today (${u.allowanceGwei} gwei) is spent: ${u.transactions} transactions, ${Math.round(u.costGwei)} gwei. It renews at 00:00 UTC.`,
      {
        details: { ...u },
        headers: { "Retry-After": String(Math.max(1, Math.ceil((next - now.getTime()) / 1000))) },
        retryable: true, // transient: the next UTC day, the same request (and Idempotency-Key) pays
      },
    );
  }

  /** Charges a mined transaction to the owner (best effort: the transaction happened either way). */
  async charge(ownerAddress: string | null, receipt: Pick<TransactionReceipt, "gasUsed" | "gasPrice"> | null | undefined): Promise<void> {
    if (!ownerAddress || !receipt) return;
    const { gasUsed, costGwei } = costOf(receipt);
    const day = today();
    const sent = this.now();
    const after = await this.usageDocs
      .findOneAndUpdate(
        { ownerAddress, day },
        { $inc: { gasUsed, costGwei, transactions: 1 }, $set: { updatedAt: new Date() }, $setOnInsert: { ownerAddress, day } },
        { upsert: true, returnDocument: "after", projection: { costGwei: 1 } },
      )
      .catch(() => null);
    // The new total, other instances' charges included: the next check before a payment needs no read.
    if (after) this.remember(ownerAddress, day, after.costGwei, sent);
    else this.known.delete(ownerAddress);
  }
}
