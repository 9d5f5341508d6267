/**
 * Leases in the database, so that several instances on one MongoDB agree on who does what: the indexer (one at a time)
 * and each agent's payments (one at a time, across instances). A lease is one document per name, taken with a
 * findOneAndUpdate whose filter says "free, expired or already mine": exactly one instance wins, on MongoDB and on
 * CongoDB alike (neither a unique index nor a transaction is needed). The holder renews it while it works; when the
 * holder dies, the lease expires and another instance takes it. An instance that restarts under the same id frees its
 * predecessor's leases at once (releaseAllOf), and a holder whose heartbeat went stale (heartbeats.ts) loses its
 * leases at once, expired or not.
 *
 * Renewal keeps a lease alive; it cannot stop a holder that stalled past its lease (a GC pause, a frozen VM, a
 * partition from the database) from waking up and carrying on. So each acquisition gets a fencing token, `fence` (the
 * lease's generation, increased on every acquisition), and the work that commits to spending checks it (HeldLease.hold)
 * after writing down what it is about to do: see src/payments/authorize.ts (begin) for why that closes the window.
 * A lease handed to the next task of its process (DistributedMutex) keeps its token; a fenced task runs under its fence
 * too, with no store command: the task before it can commit nothing more all the same, as its hold is refused here
 * once it ended, and another instance's acquisition moves both.
 */
import { randomBytes } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Collection } from "mongodb";
import type { Store } from "./index";
import { KeyedMutex } from "../util/mutex";

export interface LeaseDoc {
  name: string;
  /** The instance id holding it, or null. */
  holder: string | null;
  /** One acquisition: a holder that lost its lease (expired, taken over) cannot free or renew the next one. */
  token: string | null;
  /** The fencing token: the lease's generation, increased on every acquisition. */
  fence?: number;
  until: Date;
  updatedAt: Date;
}

/**
 * A check made right before a step that commits to spending: whether the lease it runs under is still this holder's.
 * `txnId` names the payment about to be committed under it.
 */
export interface Fence {
  /** `replaces`: a payment of the same run that ended before this one (a voucher the seller refused, paid again). */
  hold(txnId: string, replaces?: string): Promise<boolean>;
  /** Gives back what hold() took, when the payment is abandoned before anything was sent. */
  letGo?(txnId: string): Promise<void>;
}

/** One acquisition of a lease, as its holder sees it. */
export interface HeldLease extends Fence {
  name: string;
  token: string;
  fence: number;
  /** Taken from a holder whose lease had run out: that holder may still be working (stalled, not dead). */
  tookOver: boolean;
}

/** A lease a finished task handed to the next task of its process (withLease), and until when it is held. */
export interface KeptLease {
  lease: HeldLease;
  /**
   * When it runs out by the holder's monotonic clock (Leases.elapsed), as its last acquisition or renewal that
   * answered set it (no later); 0 when a renewal found it gone.
   */
  until: number;
}

const FREE = new Date(0);
const WAIT_FIRST_MS = 5;
const WAIT_MAX_MS = 100;
/** Times in a row a DistributedMutex hands a key's lease to the next task in its process before freeing it. */
const HAND_OVERS = 8;

export class Leases {
  private readonly docs: Collection<LeaseDoc>;
  /** Frees under way: withLease frees a lease just after its task ended. */
  private readonly freeing = new Set<Promise<void>>();

  /** The clock leases are measured with (injected by tests to play a stalled instance). */
  readonly clock: () => number;
  /**
   * The clock a holder measures what is left of its own lease with (withLease): a monotonic one, which a wall clock
   * stepped back cannot stretch; the injected clock when there is one.
   */
  private readonly elapsed: () => number;

  constructor(
    store: Store,
    /** This instance's id (INSTANCE_ID). */
    readonly holder: string,
    clock?: () => number,
    /** Instances whose heartbeat is stale (heartbeats.ts): their leases are taken at once, expired or not. */
    readonly deadHolders: () => readonly string[] = () => [],
  ) {
    this.docs = store.collection<LeaseDoc>("leases");
    this.clock = clock ?? Date.now;
    this.elapsed = clock ?? (() => performance.now());
  }

  /** Takes `name` for `ttlMs` if it is free, expired or this holder's; answers the acquisition's token, or null. */
  async tryAcquire(name: string, ttlMs: number, token: string = randomBytes(12).toString("hex")): Promise<string | null> {
    return (await this.acquire(name, ttlMs, token))?.token ?? null;
  }

  /** tryAcquire, answering the acquisition with its fencing token, or null. */
  async acquire(name: string, ttlMs: number, token: string = randomBytes(12).toString("hex")): Promise<HeldLease | null> {
    const now = new Date(this.clock());
    const dead = this.deadHolders();
    const free = [
      { until: { $lt: now } },
      { holder: null },
      { holder: this.holder, token },
      ...(dead.length ? [{ holder: { $in: [...dead] } }] : []),
    ];
    const take = () =>
      this.docs.findOneAndUpdate(
        { name, $or: free },
        { $set: { holder: this.holder, token, until: new Date(now.getTime() + ttlMs), updatedAt: now }, $inc: { fence: 1 } },
        { returnDocument: "before" },
      );
    let before = await take();
    if (!before) {
      // Created once per name, by upsert on the name alone (no filter on its state, so no second document can appear).
      await this.docs
        .updateOne({ name }, { $setOnInsert: { name, holder: null, token: null, fence: 0, until: FREE, updatedAt: now } }, { upsert: true })
        .catch((err: unknown) => {
          if ((err as { code?: unknown }).code !== 11000) throw err; // another instance created it first (real MongoDB's unique index)
        });
      before = await take();
    }
    if (!before) return null;
    const fence = (before.fence ?? 0) + 1;
    const tookOver =
      before.holder !== null && before.token !== token && (before.until.getTime() < now.getTime() || dead.includes(before.holder));
    const hold = async () =>
      (await this.docs.updateOne({ name, holder: this.holder, token, fence }, { $set: { updatedAt: new Date(this.clock()) } }))
        .matchedCount === 1;
    return { name, token, fence, tookOver, hold };
  }

  /** Resolves once the frees of the tasks that have ended (withLease) are done: before the store closes, say. */
  async settled(): Promise<void> {
    // A task that has just ended starts its free in the turn it ends in: the frees of this turn are waited for too.
    await nextTurn();
    while (this.freeing.size) await Promise.all([...this.freeing]);
  }

  /** Extends a lease this acquisition still holds; false when it was lost. */
  async renew(name: string, token: string, ttlMs: number): Promise<boolean> {
    const now = new Date(this.clock());
    const res = await this.docs.updateOne(
      { name, holder: this.holder, token },
      { $set: { until: new Date(now.getTime() + ttlMs), updatedAt: now } },
    );
    return res.matchedCount === 1;
  }

  async release(name: string, token: string): Promise<void> {
    await this.docs.updateOne(
      { name, holder: this.holder, token },
      { $set: { holder: null, token: null, until: FREE, updatedAt: new Date() } },
    );
  }

  /** Whether `instance` is judged dead by its stale heartbeat (its payments are taken over at once). */
  isDead(instance: string | null | undefined): boolean {
    return !!instance && instance !== this.holder && this.deadHolders().includes(instance);
  }

  /** Frees every lease this instance id holds: its predecessor under the same id died with them. */
  async releaseAllOf(holder = this.holder): Promise<number> {
    const res = await this.docs.updateMany({ holder }, { $set: { holder: null, token: null, until: FREE, updatedAt: new Date() } });
    return res.modifiedCount;
  }

  async holderOf(name: string): Promise<string | null> {
    const doc = await this.docs.findOne({ name });
    return doc && doc.until.getTime() > this.clock() ? doc.holder : null;
  }

  /**
   * Runs `task` while holding `name`, waiting (backing off) for it; renews the lease every third of `ttlMs` while the
   * task runs and frees it after. A task's lease commits nothing (its hold answers false) once the task ended.
   */
  async withLease<T>(
    name: string,
    ttlMs: number,
    task: (lease: HeldLease) => Promise<T>,
    /**
     * `kept`: the lease the task before handed over, taken again with its token (still this holder's unless another
     * instance took it since). With `fenced` (a task whose every effect that needs the lease goes through its hold), it
     * is run under as it is, with no store command, while two thirds of `ttlMs` are left of it: its first renewal, a
     * third of `ttlMs` into the task, comes in time, and another instance that took it meanwhile (this one judged dead)
     * moved its token and fence, so the task's hold answers false. `keep`: asked when the task ends, whether the lease
     * stays held (handed to the next task).
     */
    handOver: { kept?: KeptLease; fenced?: boolean; keep?: (kept: KeptLease) => boolean } = {},
  ): Promise<T> {
    const { kept } = handOver;
    let lease: HeldLease | null = null;
    let until = 0;
    if (kept && handOver.fenced && kept.until - this.elapsed() >= (ttlMs * 2) / 3) {
      lease = { ...kept.lease, tookOver: false };
      until = kept.until;
    }
    for (let delay = WAIT_FIRST_MS; !lease; delay = Math.min(delay * 2, WAIT_MAX_MS)) {
      const at = this.elapsed();
      lease = await this.acquire(name, ttlMs, kept?.lease.token);
      if (lease) until = at + ttlMs;
      else await new Promise((r) => setTimeout(r, delay));
    }
    const acquired = lease;
    let live = true;
    const held: HeldLease = {
      ...acquired,
      hold: async (txnId, replaces) => live && (await acquired.hold(txnId, replaces)) && live,
    };
    // One renewal at a time, so their answers come in the order they were applied: `until` is the last one's.
    let renewing = false;
    const heartbeat = setInterval(
      () => {
        if (renewing) return;
        renewing = true;
        const at = this.elapsed();
        this.renew(name, held.token, ttlMs)
          .then(
            // A renewal that found the lease gone: it is not handed over as held.
            (renewed) => void (until = renewed ? Math.max(until, at + ttlMs) : 0),
            () => undefined,
          )
          .finally(() => (renewing = false));
      },
      Math.max(50, Math.floor(ttlMs / 3)),
    );
    heartbeat.unref();
    try {
      return await task(held);
    } finally {
      live = false;
      clearInterval(heartbeat);
      if (!handOver.keep?.({ lease: acquired, until })) {
        // Freed in the next turn of the event loop: a caller answered from the task (DistributedMutex.run) has its
        // answer written first, and this write's encoding does not delay it.
        const freeing = nextTurn().then(() => this.release(name, held.token).catch(() => undefined));
        this.freeing.add(freeing);
        await freeing.finally(() => this.freeing.delete(freeing));
      }
    }
  }
}

/**
 * Per-key mutual exclusion across instances: one task per key at a time in this process (KeyedMutex, no database
 * round trip for the queue), and the key's lease in the database while it runs, so other instances wait for it too.
 */
export class DistributedMutex {
  private readonly local = new KeyedMutex();
  /** Tasks per key waiting in this process for the one running. */
  private readonly queued = new Map<string, number>();
  /** Per key, the lease a finished task handed to the next one here, and how many handed it on in a row. */
  private readonly kept = new Map<string, KeptLease & { turns: number }>();

  constructor(
    private readonly leases: Leases,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  /** Whether a task for `key` runs or waits in this process. */
  busy(key: string): boolean {
    return this.local.busy(key);
  }

  /**
   * Runs `task` holding the key, and answers with its result as soon as it ends: the lease is freed after that (the
   * next task for the key in this process still waits for it), so a caller's answer does not wait for one more store
   * round trip. When another task for the key waits here, the lease is handed to it instead of freed and taken again:
   * it takes it again with the same token (a free and an acquisition would take two round trips), or, when `fenced`,
   * runs under it with no store command (withLease). At most HAND_OVERS times in a row, so another instance waiting for
   * the key gets its turn. `fenced`: every effect of the task that needs the key's lease goes through its hold (a
   * payment's commit, src/payments/authorize.ts): a task that relies on the lease alone to keep other instances out
   * checks it in the store before it starts.
   */
  run<T>(key: string, task: (lease: HeldLease) => Promise<T>, opts: { fenced?: boolean } = {}): Promise<T> {
    this.queued.set(key, (this.queued.get(key) ?? 0) + 1);
    return new Promise<T>((resolve, reject) => {
      this.local
        .run(key, () => {
          const left = (this.queued.get(key) ?? 1) - 1;
          if (left > 0) this.queued.set(key, left);
          else this.queued.delete(key);
          const handed = this.kept.get(key);
          this.kept.delete(key);
          const turns = handed ? handed.turns + 1 : 0;
          const keep = (kept: KeptLease) => {
            if (!this.queued.has(key) || turns >= HAND_OVERS) return false;
            this.kept.set(key, { ...kept, turns });
            return true;
          };
          return this.leases.withLease(
            `${this.prefix}:${key.toLowerCase()}`,
            this.ttlMs,
            (lease) => {
              const done = task(lease);
              done.then(resolve, reject);
              return done;
            },
            { kept: handed, fenced: opts.fenced, keep },
          );
        })
        // The outcome went to the caller already (a task's failure, or a lease never taken, below).
        .catch((err: unknown) => reject(err as Error));
    });
  }

  /**
   * Runs `task` in this process's queue for `key` without the key's lease: other instances do not wait for it. For work
   * whose own write is its fence (a voucher: its channel's compare-and-set, src/payments/schemes/channel.ts).
   */
  runHere<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.local.run(key, task);
  }

  /** Resolves once the leases of the runs that have ended are freed (each is freed just after its answer). */
  settled(): Promise<void> {
    return this.leases.settled();
  }
}

/** A role one instance plays at a time (the indexer): hold() takes or renews it at each turn of the holder's loop. */
export class LeaderLease {
  private readonly token = randomBytes(12).toString("hex");
  /** Whether the last hold() kept the role. */
  leader = false;

  constructor(
    private readonly leases: Leases,
    private readonly name: string,
    private readonly ttlMs: number,
  ) {}

  async hold(): Promise<boolean> {
    this.leader = (await this.leases.tryAcquire(this.name, this.ttlMs, this.token)) !== null;
    return this.leader;
  }

  async release(): Promise<void> {
    if (this.leader) await this.leases.release(this.name, this.token).catch(() => undefined);
    this.leader = false;
  }
}
