/**
 * What the latency benchmarks share: quantiles of a sample, a timer that counts the JSON-RPC calls and the sent
 * transactions ("block waits") one payment made through the loopback proxy, and the start of a payment at a chosen
 * point of the block interval (so two sides compared pair by pair wait for blocks at the same phase).
 */
import type { JsonRpcProvider } from "ethers";
import type { RpcProxy } from "./rpcProxy";

export interface Stats {
  median: number;
  p95: number;
  min: number;
  max: number;
}

export function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return { median: q(0.5), p95: q(0.95), min: sorted[0], max: sorted[sorted.length - 1] };
}

export interface Sample {
  ms: number;
  rpc: number;
  blockWaits: number;
}

/** Times `fn` and counts the JSON-RPC calls and transactions sent meanwhile (through `proxy`). */
export async function timed(proxy: RpcProxy, fn: () => Promise<void>): Promise<Sample> {
  const before = proxy.total();
  const sent = proxy.counts.get("eth_sendRawTransaction") ?? 0;
  const t = process.hrtime.bigint();
  await fn();
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  return { ms, rpc: proxy.total() - before, blockWaits: (proxy.counts.get("eth_sendRawTransaction") ?? 0) - sent };
}

/**
 * On interval blocks (`interval` ms, 0 for automine): waits for a new block, then `phase` ms (not timed), then times
 * `fn`. How long a payment waits depends on when in the block interval it starts; giving both sides of a pair the same
 * phase compares what each adds, not which was luckier with the block clock.
 */
export async function atPhase(
  direct: JsonRpcProvider,
  proxy: RpcProxy,
  interval: number,
  phase: number,
  fn: () => Promise<void>,
): Promise<Sample> {
  if (interval) {
    const start = await direct.getBlockNumber();
    while ((await direct.getBlockNumber()) === start) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, phase));
  }
  return timed(proxy, fn);
}

/**
 * `runs` pairs of `a` and `b`, each pair started at one random phase of the block interval (atPhase), the one that
 * goes first alternating so neither benefits from the other's warm caches; the samples of each side, in pair order.
 */
export async function interleavedPairs(
  direct: JsonRpcProvider,
  proxy: RpcProxy,
  interval: number,
  runs: number,
  a: () => Promise<void>,
  b: () => Promise<void>,
): Promise<[Sample[], Sample[]]> {
  const as: Sample[] = [];
  const bs: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const phase = Math.random() * interval;
    if (i % 2 === 0) {
      as.push(await atPhase(direct, proxy, interval, phase, a));
      bs.push(await atPhase(direct, proxy, interval, phase, b));
    } else {
      bs.push(await atPhase(direct, proxy, interval, phase, b));
      as.push(await atPhase(direct, proxy, interval, phase, a));
    }
  }
  return [as, bs];
}

/** A row of median / p95 / min / max (ms), then the median RPC calls and block waits per payment. */
export function row(label: string, samples: Sample[]): string {
  const fmt = (n: number) => n.toFixed(1).padStart(7);
  const s = stats(samples.map((x) => x.ms));
  const rpc = String(stats(samples.map((x) => x.rpc)).median).padStart(4);
  const waits = String(stats(samples.map((x) => x.blockWaits)).median).padStart(11);
  return `${label.padEnd(20)} ${fmt(s.median)}  ${fmt(s.p95)}  ${fmt(s.min)}  ${fmt(s.max)}        ${rpc}  ${waits}`;
}

export const ROW_HEADER = `                       median      p95      min      max   (ms)   RPC calls  block waits (median per payment)`;
