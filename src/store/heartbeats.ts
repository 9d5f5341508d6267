/**
 * Instance heartbeats in the database, so that a dead instance's work passes to a live one in seconds, whatever its
 * INSTANCE_ID and whatever the lease lengths (LOCK_LEASE_MS, PAYMENT_LEASE_MS). Each instance bumps a counter in its own
 * document every HEARTBEAT_MS and reads everyone's. A peer is dead when its counter has not moved for HEARTBEAT_STALE_MS
 * as measured on this instance's own clock (so clocks of different machines never get compared) and over at least three
 * of this instance's own completed turns (so a store that was down or hung for everyone does not make every peer look
 * dead on the first reading after it). A peer seen for the
 * first time gets the full staleness bound before it can be judged (a new instance waits that long before taking over
 * from an instance that died before it started). An instance never judges itself; a peer that beats again is alive
 * again at once (it only stalled: see failover.ts for why that is safe).
 *
 * Holders without a heartbeat document (a version from before heartbeats) are never judged dead: their work passes on
 * when their leases run out, as before.
 */
import type { Collection } from "mongodb";
import type { Store } from "./index";

export interface HeartbeatDoc {
  instance: string;
  /** Bumped on every beat; what peers watch. */
  beat: number;
  /** The writer's clock at its last beat (for people reading the collection, and to prune ancient documents). */
  at: Date;
  startedAt: Date;
}

export interface HeartbeatOptions {
  /** How often this instance beats and reads its peers' beats. */
  intervalMs: number;
  /** A peer whose beat has not moved for this long (at least three beats) is dead. */
  staleMs: number;
  /** This instance's clock (tests inject one). */
  clock?: () => number;
}

/** A peer is judged dead only after this many of this instance's own turns without a beat of its. */
const MIN_TURNS = 3;
/** Documents not written for this long are removed (an instance id that never came back). */
const PRUNE_AFTER_MS = 24 * 3600 * 1000;

export class Heartbeats {
  private readonly docs: Collection<HeartbeatDoc>;
  private readonly clock: () => number;
  private readonly staleMs: number;
  /** Each peer's last counter and when (on this clock) it was first seen at that value. */
  private readonly seen = new Map<string, { beat: number; since: number; turn: number }>();
  private deadNow: readonly string[] = [];
  /** Dead peers whose work was found all finished (onDead answered true): not handed to onDead again. */
  private readonly cleared = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | null = null;
  private handing: Promise<void> | null = null;
  /** This instance's completed turns (a beat written and the peers' read). */
  private turns = 0;
  /**
   * Called after a tick that found dead peers whose work is not known to be finished; answers whether all of it is
   * (then those peers are not handed over again unless they beat again and die again).
   */
  onDead: (dead: readonly string[]) => Promise<boolean> = () => Promise.resolve(true);

  constructor(
    store: Store,
    /** This instance's id (INSTANCE_ID). */
    readonly instance: string,
    private readonly opts: HeartbeatOptions,
  ) {
    this.docs = store.collection<HeartbeatDoc>("heartbeats");
    this.clock = opts.clock ?? Date.now;
    this.staleMs = Math.max(opts.staleMs, 3 * opts.intervalMs);
  }

  /** The peers judged dead at the last tick. */
  dead(): readonly string[] {
    return this.deadNow;
  }

  isDead(instance: string | null | undefined): boolean {
    return !!instance && this.deadNow.includes(instance);
  }

  /** Whether this instance is beating. */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Beats once (the start-up's beat fails loudly: the store must answer), then every intervalMs. */
  async start(): Promise<void> {
    clearInterval(this.timer);
    const now = new Date(this.clock());
    await this.docs.updateOne(
      { instance: this.instance },
      { $inc: { beat: 1 }, $set: { at: now, startedAt: now }, $setOnInsert: { instance: this.instance } },
      { upsert: true },
    );
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  /** Stops beating (a clean stop; a killed process just stops). Peers judge this instance dead once it is stale. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
    await this.handing;
  }

  /** One beat and one reading of the peers; never two at once (a slow store skips a turn rather than piling up). */
  tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    this.ticking = this.turn()
      .catch(() => undefined) // the store is down: no turn, nobody judged (see `turns`)
      .finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async turn(): Promise<void> {
    const now = this.clock();
    await this.docs.updateOne(
      { instance: this.instance },
      { $inc: { beat: 1 }, $set: { at: new Date(now) }, $setOnInsert: { instance: this.instance, startedAt: new Date(now) } },
      { upsert: true },
    );
    const peers = await this.docs.find({ instance: { $ne: this.instance } }).toArray();
    // Judged by time and by this instance's own turns: while the store is down or hangs, this instance's turns do not
    // complete either, so a peer that could not beat meanwhile is not judged on the reading right after.
    const turn = ++this.turns;
    const dead: string[] = [];
    for (const p of peers) {
      const last = this.seen.get(p.instance);
      if (!last || last.beat !== p.beat) {
        this.seen.set(p.instance, { beat: p.beat, since: now, turn });
        this.cleared.delete(p.instance);
      } else if (now - last.since >= this.staleMs && turn - last.turn >= MIN_TURNS) dead.push(p.instance);
      if (now - p.at.getTime() > PRUNE_AFTER_MS) await this.docs.deleteOne({ instance: p.instance, beat: p.beat });
    }
    this.deadNow = dead;
    const pending = dead.filter((d) => !this.cleared.has(d));
    // Off the beat: taking over can take a while (chain calls), and this instance must not look dead meanwhile.
    if (pending.length && !this.handing) {
      this.handing = this.onDead(pending)
        .then((done) => {
          if (done) for (const d of pending) this.cleared.add(d);
        })
        .catch(() => undefined)
        .finally(() => (this.handing = null));
    }
  }
}
