/**
 * Learning of transactions' inclusion quickly without a fixed 1 s poll, and without one poll loop per transaction.
 *
 * A waiter asks for its receipt at once (an automining node has it already). After that one loop per client wakes it:
 * while few transactions wait, every waiter asks for its receipt at each tick (the lowest latency: one call); once more
 * wait (a busy instance: a hundred payments in flight), the loop reads the latest block instead, one call a tick, and
 * wakes only the waiters whose transaction a new block includes. Per-transaction polling made a call per payment every
 * tick, which on Base's 2 s blocks was about twenty calls per payment per block waited for: load on the node (and the
 * RPC bill) that grew with the payments in flight, not with the blocks.
 *
 * Why nothing is missed: a waiter registers before its first ask. Blocks the loop has not read yet are all read (from
 * the last block it read, up to a bound), and a block it had read before the waiter registered was mined before that,
 * so the first ask sees it. When the loop starts afresh or falls behind it wakes every waiter once, and every waiter
 * is woken at least every `recheckMs` whatever the blocks say (a node that reorganised, or answers blocks oddly).
 */
export type Rpc = (method: string, params: unknown[]) => Promise<unknown>;

export interface WatcherOptions {
  /** Pause between two ticks. Default 50 ms. */
  intervalMs?: number;
  /** Up to this many waiters each ask for their receipt every tick; above it the loop reads blocks. Default 4. */
  directLimit?: number;
  /** A waiter asks again at least this often, whatever the blocks say. Default 2 000 ms. */
  recheckMs?: number;
  /** The most blocks read in one tick; further behind, every waiter asks instead. Default 20. */
  maxBlocksPerTick?: number;
}

interface Waiter {
  hash: string;
  /** When it last asked for its receipt. */
  asked: number;
  wake: (() => void) | null;
}

interface RawBlock {
  number?: unknown;
  transactions?: unknown;
}

export class ReceiptWatcher {
  private readonly waiters = new Set<Waiter>();
  private lastSeen: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private readonly intervalMs: number;
  private readonly directLimit: number;
  private readonly recheckMs: number;
  private readonly maxBlocks: number;
  /** Calls the loop itself made (block reads), for the benchmarks. */
  blockReads = 0;
  /**
   * Whether the last wait that ended had its receipt at the first ask: the node mines what it receives at once (an
   * automining devnet), so what a transaction changes is in effect as soon as it is sent.
   */
  immediate = false;

  constructor(
    private readonly rpc: Rpc,
    opts: WatcherOptions = {},
  ) {
    this.intervalMs = opts.intervalMs ?? 50;
    this.directLimit = opts.directLimit ?? 4;
    this.recheckMs = opts.recheckMs ?? 2_000;
    this.maxBlocks = opts.maxBlocksPerTick ?? 20;
  }

  /** The receipt of `hash`, fetched by `fetchReceipt` (null while unmined), or null past `timeoutMs`. */
  async wait<R>(hash: string, fetchReceipt: () => Promise<R | null>, timeoutMs = 120_000): Promise<R | null> {
    const deadline = Date.now() + timeoutMs;
    const w: Waiter = { hash: hash.toLowerCase(), asked: Date.now(), wake: null };
    this.waiters.add(w);
    this.schedule();
    try {
      for (let first = true; ; first = false) {
        w.asked = Date.now();
        const receipt = await fetchReceipt();
        if (receipt) {
          this.immediate = first;
          return receipt;
        }
        const left = deadline - Date.now();
        if (left <= 0) return null;
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, left);
          function done() {
            clearTimeout(t);
            w.wake = null;
            resolve();
          }
          w.wake = done;
        });
      }
    } finally {
      this.waiters.delete(w);
    }
  }

  /** Waiters now waiting (for tests and the benchmarks). */
  get waiting(): number {
    return this.waiters.size;
  }

  private schedule(): void {
    if (this.timer || this.ticking || !this.waiters.size) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tick();
    }, this.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.ticking = true;
    try {
      if (this.waiters.size <= this.directLimit) {
        // Few waiters: each asks for its own receipt, and block reading starts afresh when it is needed again.
        this.lastSeen = null;
        this.wakeAll();
      } else {
        await this.scan();
      }
    } catch {
      // The node did not answer: the waiters ask themselves, and the next tick tries again.
      this.lastSeen = null;
      this.wakeAll();
    } finally {
      this.ticking = false;
      this.schedule();
    }
  }

  /** Reads the blocks since the last one read and wakes the waiters they include. */
  private async scan(): Promise<void> {
    const latest = await this.block("latest");
    const n = latest.number;
    const from = this.lastSeen;
    this.lastSeen = n;
    if (from === null || n - from > this.maxBlocks) {
      this.wakeAll();
      return;
    }
    const included = new Set(latest.hashes);
    for (let b = from + 1; b < n; b++) for (const h of (await this.block(`0x${b.toString(16)}`)).hashes) included.add(h);
    const stale = Date.now() - this.recheckMs;
    for (const w of this.waiters) if (included.has(w.hash) || w.asked < stale) w.wake?.();
  }

  private async block(tag: string): Promise<{ number: number; hashes: string[] }> {
    this.blockReads++;
    const raw = (await this.rpc("eth_getBlockByNumber", [tag, false])) as RawBlock | null;
    const number = typeof raw?.number === "string" ? Number(raw.number) : NaN;
    if (!Number.isSafeInteger(number) || !Array.isArray(raw?.transactions)) throw new Error(`no block ${tag}`);
    return { number, hashes: raw.transactions.filter((h): h is string => typeof h === "string").map((h) => h.toLowerCase()) };
  }

  private wakeAll(): void {
    for (const w of this.waiters) w.wake?.();
  }
}
