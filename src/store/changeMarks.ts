/**
 * Change marks: one counter document per kind of change (an API key revoked, a webhook endpoint created or disabled),
 * moved after every such change is written. An instance's memories of that kind (key lookups, owners' subscriptions)
 * stand past their own age while the mark has not moved since they were made: one read of the mark, at most every
 * half `maxAgeMs`, keeps all of them current, instead of one read of the store per memory.
 *
 * Why a memory that stands is current to within `maxAgeMs` of any change: a memory belongs to the epoch in force when
 * its read began, and the epoch moves whenever a read of the mark finds it moved. A change written after the memory's
 * read began moves the mark after it, so the first read of the mark to begin after that finds it moved, and the memory
 * stops standing once that read ends. A memory stands only while the last read of the mark that ended began less than
 * `maxAgeMs` ago, and a use later than that waits for a new one: so by `maxAgeMs` after a change, no memory made before
 * it stands. Nothing here reads a clock of another machine, and an age this machine's clock makes negative (it went
 * back) counts as too old.
 *
 * What the mark cannot see is a change written without moving it: by hand in the database, or by an instance that
 * stopped (or lost the store) between its write and the mark's. Doing the change again moves the mark (moveMark always
 * moves), and no memory stands on the mark longer than `longestMs` after its own read, whatever the mark says.
 */
import type { Collection } from "mongodb";
import type { Store } from "./index";

export interface ChangeMarkDoc {
  name: string;
  seq: number;
  updatedAt: Date;
}

const CHANGE_MARKS = "changeMarks";

/** Whether `since` is at most `limitMs` before `now` (exclusive): a time after `now` (a clock that went back) is not. */
export function within(now: number, since: number, limitMs: number): boolean {
  return now >= since && now - since < limitMs;
}

/** The marks' collection of `store`. */
export function changeMarks(store: Pick<Store, "collection">): Collection<ChangeMarkDoc> {
  return store.collection<ChangeMarkDoc>(CHANGE_MARKS);
}

/** Moves mark `name`: after the change it marks is written, every time (a change done again moves it again). */
export async function moveMark(store: Pick<Store, "collection">, name: string): Promise<void> {
  await changeMarks(store).updateOne({ name }, { $inc: { seq: 1 }, $set: { updatedAt: new Date() } }, { upsert: true });
}

/** One instance's reads of mark `name` (see above). */
export class ChangeMark {
  /** Moves whenever a read of the mark finds it moved: memories made before stop standing. */
  private epoch = 0;
  /** The mark as the last read found it; null before the first. */
  private seen: number | null = null;
  /** When the last read of the mark that ended began (this.now()); memories stand within maxAgeMs of it. */
  private confirmedAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;
  private readonly docs: Collection<ChangeMarkDoc>;

  constructor(
    store: Pick<Store, "collection">,
    private readonly name: string,
    private readonly o: {
      /** How long ago the mark's last read may have begun for a memory to stand on it. */
      maxAgeMs: number;
      /**
       * The longest a memory stands on the mark at all, from its own read: a change written without moving the mark
       * (by hand in the database, or by an instance that stopped between its two writes) is seen within it.
       */
      longestMs: number;
      now?: () => number;
    },
  ) {
    this.docs = changeMarks(store);
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** The epoch a memory whose read begins now belongs to. */
  current(): number {
    return this.epoch;
  }

  /**
   * When the mark was last found where it was when a memory of `epoch`, read at `madeAt` (this.now() time), was made,
   * if less than maxAgeMs ago; null when that memory does not stand (the mark moved since, it is longestMs old, or the
   * clock went back past either). Waits for a read of the mark when its last one is too old, and starts one without
   * waiting from half maxAgeMs on.
   */
  async confirmed(epoch: number, madeAt: number): Promise<number | null> {
    const stands = (now: number) =>
      epoch === this.epoch && within(now, madeAt, this.o.longestMs) && within(now, this.confirmedAt, this.o.maxAgeMs);
    const now = this.now();
    if (epoch !== this.epoch || !within(now, madeAt, this.o.longestMs)) return null;
    if (!within(now, this.confirmedAt, this.o.maxAgeMs)) await this.read();
    else if (now - this.confirmedAt >= this.o.maxAgeMs / 2) void this.read();
    return stands(this.now()) ? this.confirmedAt : null;
  }

  /** Reads the mark (one read at a time; a failed read confirms nothing). */
  private read(): Promise<void> {
    this.reading ??= (async () => {
      const startedAt = this.now();
      try {
        const doc = await this.docs.findOne({ name: this.name }, { projection: { seq: 1 } });
        const seq = doc?.seq ?? 0;
        // The first read too: a memory made before it may predate a change it cannot tell.
        if (seq !== this.seen) {
          this.seen = seq;
          this.epoch++;
        }
        // Reads run one at a time, so this is the latest start (earlier than the last one only if the clock went back).
        this.confirmedAt = startedAt;
      } catch {
        // Nothing confirmed: the memories stop standing when their time is up, and the store answers instead.
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}
