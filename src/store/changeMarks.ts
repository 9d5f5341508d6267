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
 * it stands. Nothing here reads a clock of another machine. What the mark cannot see is a change whose writer stopped
 * between its write and the mark's: its caller saw it fail, and doing it again moves the mark (moveMark always moves).
 */
import type { Collection } from "mongodb";
import type { Store } from "./index";

export interface ChangeMarkDoc {
  name: string;
  seq: number;
  updatedAt: Date;
}

export const CHANGE_MARKS = "changeMarks";

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
  /** Moves whenever a read of the mark finds it moved (or it is forgotten here): memories made before stop standing. */
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
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.docs = changeMarks(store);
  }

  /** The epoch a memory whose read begins now belongs to. */
  current(): number {
    return this.epoch;
  }

  /** Every memory made so far stops standing (a change made here: its writer also moves the mark for the others). */
  forget(): void {
    this.epoch++;
  }

  /**
   * When the mark was last found where it was when a memory of `epoch` was made, if less than maxAgeMs ago (this.now()
   * time); null when that memory does not stand. Reads the mark first when its last read began maxAgeMs ago or more,
   * and starts a read without waiting for it from half that on.
   */
  async confirmed(epoch: number): Promise<number | null> {
    if (epoch !== this.epoch) return null;
    const age = this.now() - this.confirmedAt;
    if (age >= this.maxAgeMs / 2) {
      const read = this.read();
      if (age >= this.maxAgeMs) await read;
    }
    return epoch === this.epoch && this.now() - this.confirmedAt < this.maxAgeMs ? this.confirmedAt : null;
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
        this.confirmedAt = Math.max(this.confirmedAt, startedAt);
      } catch {
        // Nothing confirmed: the memories stop standing when their time is up, and the store answers instead.
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}
