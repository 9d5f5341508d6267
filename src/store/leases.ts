/**
 * Leases in the database, so that several instances on one MongoDB agree on who does what: the indexer (one at a time)
 * and each agent's payments (one at a time, across instances). A lease is one document per name, taken with a
 * findOneAndUpdate whose filter says "free, expired or already mine": exactly one instance wins, on MongoDB and on
 * CongoDB alike (neither a unique index nor a transaction is needed). The holder renews it while it works; when the
 * holder dies, the lease expires and another instance takes it. An instance that restarts under the same id frees its
 * predecessor's leases at once (releaseAllOf).
 */
import { randomBytes } from "node:crypto";
import type { Collection } from "mongodb";
import type { Store } from "./index";
import { KeyedMutex } from "../util/mutex";

export interface LeaseDoc {
  name: string;
  /** The instance id holding it, or null. */
  holder: string | null;
  /** One acquisition: a holder that lost its lease (expired, taken over) cannot free or renew the next one. */
  token: string | null;
  until: Date;
  updatedAt: Date;
}

const FREE = new Date(0);
const WAIT_FIRST_MS = 5;
const WAIT_MAX_MS = 100;

export class Leases {
  private readonly docs: Collection<LeaseDoc>;

  constructor(
    store: Store,
    /** This instance's id (INSTANCE_ID). */
    readonly holder: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.docs = store.collection<LeaseDoc>("leases");
  }

  /** Takes `name` for `ttlMs` if it is free, expired or this holder's; answers the acquisition's token, or null. */
  async tryAcquire(name: string, ttlMs: number, token: string = randomBytes(12).toString("hex")): Promise<string | null> {
    const now = new Date(this.clock());
    const take = () =>
      this.docs.findOneAndUpdate(
        { name, $or: [{ until: { $lt: now } }, { holder: null }, { holder: this.holder, token }] },
        { $set: { holder: this.holder, token, until: new Date(now.getTime() + ttlMs), updatedAt: now } },
        { returnDocument: "after" },
      );
    let doc = await take();
    if (!doc) {
      // Created once per name, by upsert on the name alone (no filter on its state, so no second document can appear).
      await this.docs
        .updateOne({ name }, { $setOnInsert: { name, holder: null, token: null, until: FREE, updatedAt: now } }, { upsert: true })
        .catch((err: unknown) => {
          if ((err as { code?: unknown }).code !== 11000) throw err; // another instance created it first (real MongoDB's unique index)
        });
      doc = await take();
    }
    return doc && doc.token === token && doc.holder === this.holder ? token : null;
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
   * task runs and frees it after.
   */
  async withLease<T>(name: string, ttlMs: number, task: () => Promise<T>): Promise<T> {
    let token: string | null = null;
    for (let delay = WAIT_FIRST_MS; !(token = await this.tryAcquire(name, ttlMs)); delay = Math.min(delay * 2, WAIT_MAX_MS)) {
      await new Promise((r) => setTimeout(r, delay));
    }
    const held = token;
    const heartbeat = setInterval(
      () => {
        this.renew(name, held, ttlMs).catch(() => undefined);
      },
      Math.max(50, Math.floor(ttlMs / 3)),
    );
    heartbeat.unref();
    try {
      return await task();
    } finally {
      clearInterval(heartbeat);
      await this.release(name, held).catch(() => undefined);
    }
  }
}

/**
 * Per-key mutual exclusion across instances: one task per key at a time in this process (KeyedMutex, no database
 * round trip for the queue), and the key's lease in the database while it runs, so other instances wait for it too.
 */
export class DistributedMutex {
  private readonly local = new KeyedMutex();

  constructor(
    private readonly leases: Leases,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.local.run(key, () => this.leases.withLease(`${this.prefix}:${key.toLowerCase()}`, this.ttlMs, task));
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
