/**
 * Reads a V8 .cpuprofile (node --cpu-prof) of a SpendGate instance and says where its CPU went during a measured window:
 * the top self-time functions (aggregated by function + url:line) and the CPU ms per approved payment split by payment
 * step. Used by bench:throughput's production shape (THROUGHPUT_PROFILE, scripts/bench/throughputCluster.ts); also
 * `tsx scripts/bench/cpuProfile.ts <file.cpuprofile> [payments]` for a profile taken by hand (whole profile).
 *
 * Method. A sample's time is the gap to the next sample (timeDeltas[i + 1], as Chrome's DevTools counts it); "(idle)"
 * samples are not CPU and are left out. Each sample is charged to ONE bucket, from its stack (leaf first):
 *   - the seller: any frame in src/x402/seller.ts, src/x402/facilitator*.ts or src/http/routes/sell.ts (with one
 *     instance the bench's seller is served by the same process: its verify and settle are in the figure);
 *   - else the deepest frame in src/payments/<step>.ts: "payments/<step>" (the step's own code and all it calls);
 *   - else the deepest frame in src/ by group: x402 (buyer side), chain/rpc (src/chain/rpc*, rawRpc, rpcTransport,
 *     provider, callTx, abiCodec), chain (the rest of src/chain), store (src/store), http (src/http: Koa routes,
 *     auth, middleware), services, other src;
 *   - else by the deepest library frame (mongodb driver with bson, koa, ethers, viem, undici, ...), else node
 *     internals (node:*: sockets, streams, timers, its HTTP server and client), else "(garbage collector)" /
 *     "(program)" (V8's own names);
 *   - "other": a stack with none of those (anonymous native frames, microtask ticks a resumed promise left with no
 *     JavaScript frame above it).
 * The profiler's sample gaps are wall time (on a loaded machine a thread waiting for a core is counted too), so the
 * shares are what is measured, and the ms a payment are those shares of the process's own CPU time (/proc) when the
 * caller gives it (`cpuMsPerPayment`), else of the sampled time.
 */
import { readFileSync } from "node:fs";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileReport {
  /** CPU ms in the window (idle left out). */
  cpuMs: number;
  top: { name: string; ms: number }[];
  buckets: { name: string; ms: number }[];
}

function shortUrl(url: string): string {
  const u = url.replace(/^file:\/\//, "");
  const nm = u.lastIndexOf("node_modules/");
  if (nm >= 0) return u.slice(nm + "node_modules/".length);
  const src = u.search(/\/(src|scripts|test)\//);
  return src >= 0 ? u.slice(src + 1) : u;
}

const SELLER = /src\/(x402\/(seller|facilitator[A-Za-z]*)|http\/routes\/sell)\.ts$/;
const STEP = /src\/payments\/([A-Za-z]+)\.ts$/;

function srcGroup(url: string): string | undefined {
  const m = url.match(/\/src\/(.+)\.ts$/);
  if (!m) return undefined;
  const p = m[1];
  if (/^chain\/(rpc\/|rawRpc|rpcTransport|provider|callTx|abiCodec|checksum)/.test(p)) return "chain/rpc";
  for (const g of ["x402", "chain", "store", "http", "services", "wallets", "policy", "schemas", "indexer", "webhooks"]) {
    if (p.startsWith(`${g}/`)) return g;
  }
  return "other src";
}

function libGroup(url: string, fn: string): string | undefined {
  if (fn === "(garbage collector)" || fn === "(program)") return fn;
  if (url.startsWith("node:")) return "node internals";
  const m = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/);
  if (!m) return undefined;
  const lib = m[1];
  if (lib === "bson") return "mongodb";
  if (lib.startsWith("koa") || lib.startsWith("@koa")) return "koa";
  return lib;
}

/** The bucket of one stack (leaf first). */
function bucketOf(stack: CallFrame[]): string {
  if (stack.some((f) => SELLER.test(f.url))) return "seller (same process)";
  for (const f of stack) {
    const m = f.url.match(STEP);
    if (m) return `payments/${m[1]}`;
  }
  for (const f of stack) {
    const g = srcGroup(f.url);
    if (g) return g;
  }
  let internal: string | undefined;
  for (const f of stack) {
    const g = libGroup(f.url, f.functionName);
    if (g === "node internals") internal ??= g;
    else if (g) return g;
  }
  return internal ?? "other";
}

/** Analyses the samples taken between `from` and `to` (µs on the profile's clock: CLOCK_MONOTONIC on Linux). */
export function analyse(p: CpuProfile, window?: { from: number; to: number }, topN = 15): ProfileReport {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const stackCache = new Map<number, string>();
  const bucketFor = (id: number): string => {
    let b = stackCache.get(id);
    if (b === undefined) {
      const stack: CallFrame[] = [];
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur)!.callFrame);
      b = bucketOf(stack);
      stackCache.set(id, b);
    }
    return b;
  };
  const self = new Map<string, number>();
  const buckets = new Map<string, number>();
  let t = p.startTime;
  let cpu = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i];
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (window && (t < window.from || t > window.to)) continue;
    const node = byId.get(p.samples[i])!;
    const f = node.callFrame;
    if (f.functionName === "(idle)") continue;
    cpu += dt;
    const key = `${f.functionName || "(anonymous)"} ${f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : ""}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
    const b = bucketFor(node.id);
    buckets.set(b, (buckets.get(b) ?? 0) + dt);
  }
  const sorted = (m: Map<string, number>) => [...m.entries()].sort(([, a], [, b]) => b - a).map(([name, us]) => ({ name, ms: us / 1000 }));
  return { cpuMs: cpu / 1000, top: sorted(self).slice(0, topN), buckets: sorted(buckets) };
}

/** The report as lines: top self-time functions and the per-step split, both in ms per approved payment. */
export function formatReport(r: ProfileReport, payments: number, cpuMsPerPayment?: number): string {
  const scale = cpuMsPerPayment === undefined ? 1 / Math.max(1, payments) : cpuMsPerPayment / Math.max(1e-9, r.cpuMs);
  const per = (ms: number) => (ms * scale).toFixed(2);
  const pct = (ms: number) => `${((100 * ms) / Math.max(1e-9, r.cpuMs)).toFixed(1)}%`;
  return [
    `profile: ${r.cpuMs.toFixed(0)} ms sampled (not idle) for ${payments} payments; ms a payment below are shares of ${
      cpuMsPerPayment === undefined ? "the sampled time" : `the process's own CPU, ${cpuMsPerPayment.toFixed(1)} ms a payment (/proc)`
    }`,
    `top ${r.top.length} self time (ms a payment, share):`,
    ...r.top.map((t, i) => `  ${String(i + 1).padStart(2)}. ${per(t.ms).padStart(6)} ${pct(t.ms).padStart(6)}  ${t.name}`),
    `by step (ms a payment, share; each sample to the seller, else its deepest src/payments/<step>.ts frame, else its deepest src/ group, else its library; "other": no JavaScript frame of ours or a library's):`,
    ...r.buckets.map((b) => `  ${per(b.ms).padStart(6)} ${pct(b.ms).padStart(6)}  ${b.name}`),
  ].join("\n");
}

export function readProfile(file: string): CpuProfile {
  return JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
}

/** The profile's clock now, in µs (V8's TimeTicks are CLOCK_MONOTONIC on Linux, as process.hrtime). */
export function profileClockNow(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

if (require.main === module) {
  const [file, payments] = process.argv.slice(2);
  if (!file) {
    console.error("usage: tsx scripts/bench/cpuProfile.ts <file.cpuprofile> [approved payments]");
    process.exit(2);
  }
  console.log(formatReport(analyse(readProfile(file)), Number(payments ?? 1)));
}
