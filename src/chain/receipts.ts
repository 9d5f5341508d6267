/**
 * Learning of a transaction's inclusion quickly without a fixed 1 s poll: ask for the receipt at once (an automining
 * node has it already), then again after 10, 15, 22... ms, never waiting more than `maxIntervalMs` between asks. On
 * Base (2 s blocks, 200 ms flashblocks) that notices inclusion within a tenth of a second for about ten calls a block.
 */
export interface PollOptions {
  /** Longest pause between two asks. Default 100 ms. */
  maxIntervalMs?: number;
  /** Give up (answer null) after this long. Default 120 000 ms. */
  timeoutMs?: number;
}

export async function pollReceipt<R>(fetchReceipt: () => Promise<R | null>, opts: PollOptions = {}): Promise<R | null> {
  const max = opts.maxIntervalMs ?? 100;
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (let delay = 10; ; delay = Math.min(max, Math.ceil(delay * 1.5))) {
    const receipt = await fetchReceipt();
    if (receipt) return receipt;
    if (Date.now() + delay > deadline) return null;
    await new Promise((r) => setTimeout(r, delay));
  }
}
