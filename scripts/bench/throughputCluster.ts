/**
 * bench:throughput in the production shape (THROUGHPUT_SHAPE=processes): the chain (scripts/chain.ts) and the store
 * (one CongoDB server) in their own processes and THROUGHPUT_INSTANCES (default "1,2") SpendGate processes, as
 * `npm run cluster` starts them; this process only sends the payments, spread over the instances, to the instances'
 * own /sell/agent-intel. Prints the rate, latency, failures, each process's CPU seconds (also per payment net of its
 * idle rate, read for THROUGHPUT_IDLE_SECONDS before each window) and memory at the end, and the JSON-RPC calls the
 * chain served per approved payment by method.
 *
 * THROUGHPUT_WARMUP_SECONDS (30): the same load first, not measured (warmUp).
 *
 * THROUGHPUT_PROFILE (on unless "0"): the first instance runs under --cpu-prof (its profile in a temp dir, read when the
 * cluster stops); each mode's window is then printed as the top 15 self-time functions and the CPU ms per approved
 * payment by payment step (scripts/bench/cpuProfile.ts). The /proc CPU figures include the profiler's own cost.
 * THROUGHPUT_INSTANCE1_ARGS: more node flags for the first instance alone (say "--max-semi-space-size=32"), so that
 * with THROUGHPUT_INSTANCES=2 the two instances compare a flag side by side in one run, on the same load.
 * THROUGHPUT_SELLER=apart: the seller (/sell/agent-intel) is one more SpendGate process that takes no payments, so the
 * paying instances' CPU is the service's own (by default, with one instance, it also serves the seller's verify/settle).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcProvider } from "ethers";
import { startCluster, type Cluster } from "../cluster/cluster";
import { fundAgents, onboardAgent, type ClusterAgent } from "../cluster/client";
import { setBlockInterval } from "./mining";
import { STATS_METHOD, formatStats, type RpcStats } from "./nodeStats";
import { analyse, formatReport, profileClockNow, readProfile } from "./cpuProfile";

export interface ThroughputOptions {
  agents: number;
  inFlight: number;
  seconds: number;
  modes: string[];
}

const PAGE = 4096;
const SPREAD = process.env.THROUGHPUT_SPREAD === "1";
const PROFILE = process.env.THROUGHPUT_PROFILE !== "0";
const SELLER_APART = process.env.THROUGHPUT_SELLER === "apart";
const INSTANCE1_ARGS = (process.env.THROUGHPUT_INSTANCE1_ARGS ?? "").split(" ").filter(Boolean);
/** Seconds each process's idle CPU is read for, before each mode's window. */
const IDLE_S = Number(process.env.THROUGHPUT_IDLE_SECONDS ?? 3);
const WARMUP_S = Number(process.env.THROUGHPUT_WARMUP_SECONDS ?? 30);

/** One mode's measured window on the profiled instance: the profile's clock and the payments it approved. */
interface ProfileWindow {
  label: string;
  from: number;
  to: number;
  approved: number;
  /** The profiled instance's CPU ms (/proc) per payment it approved in the window. */
  cpuMsPerPayment: number;
}
const TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user + system) and resident memory of a process (or of one of its threads, `tid`), from /proc. */
export function usage(pid: number, tid?: number): { cpu: number; rssMiB: number } {
  try {
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cpu = (Number(fields[11]) + Number(fields[12])) / TICKS;
    const rssMiB = (Number(fields[21]) * PAGE) / 2 ** 20;
    return { cpu, rssMiB };
  } catch {
    return { cpu: 0, rssMiB: 0 };
  }
}

async function send(
  url: string,
  agent: ClusterAgent,
  seller: string,
): Promise<{ status: number; body: { error?: string; reason?: string } }> {
  const res = await fetch(`${url}/pay`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${agent.apiKey}` },
    body: JSON.stringify({ agentAddress: agent.agentAddress, serviceUrl: seller, maxAmount: "0.01", intent: "throughput" }),
  });
  return { status: res.status, body: (await res.json()) as { error?: string; reason?: string } };
}

type Instance = Cluster["instances"][number];
type Sent = Awaited<ReturnType<typeof send>>;

/** The instances that take payments: with the seller apart, the last instance is the seller's and takes none. */
function payersOf(cluster: Cluster): Instance[] {
  return SELLER_APART ? cluster.instances.slice(0, -1) : cluster.instances;
}

/** Keeps `inFlight` payments of every agent going until `deadline`, reporting each answer. */
async function drive(
  cluster: Cluster,
  agents: ClusterAgent[],
  inFlight: number,
  deadline: number,
  onResult: (inst: Instance, ms: number, res: Sent) => void,
): Promise<void> {
  const payers = payersOf(cluster);
  const n = payers.length;
  await Promise.all(
    agents.flatMap((a, i) =>
      Array.from({ length: inFlight }, async (_, j) => {
        // Each agent's payments go to one instance (a load balancer routing on the agent): the per-agent lock then waits
        // in that process, not by polling its lease in the database. THROUGHPUT_SPREAD=1 spreads them instead.
        const inst = payers[(SPREAD ? i + j : i) % n];
        const seller = `${SELLER_APART ? cluster.instances[n].url : payers[(i + 1) % n].url}/sell/agent-intel`;
        while (Date.now() < deadline) {
          const t = Date.now();
          const res = await send(inst.url, a, seller).catch((err: unknown) => ({
            status: 0,
            body: { error: (err as Error).message, reason: undefined },
          }));
          onResult(inst, Date.now() - t, res);
        }
      }),
    ),
  );
}

/**
 * THROUGHPUT_WARMUP_SECONDS (default 30, automine) of the same load before the first measured window, not counted: a
 * SpendGate process serves payments for hours, and its first seconds are spent compiling (V8 optimises a function
 * after it has run many times, on threads whose CPU counts against the process). Without it the window measures the
 * JIT's warm-up as much as the payments. Prints the warm-up's own CPU per payment too.
 */
async function warmUp(cluster: Cluster, agents: ClusterAgent[], o: ThroughputOptions): Promise<void> {
  if (WARMUP_S <= 0) return;
  const first = payersOf(cluster)[0];
  const pid = first.child.pid ?? 0;
  const cpu0 = usage(pid).cpu;
  let approved = 0;
  let failed = 0;
  await drive(cluster, agents, o.inFlight, Date.now() + WARMUP_S * 1000, (inst, _ms, res) => {
    if (res.status !== 200) failed++;
    else if (inst === first) approved++;
  });
  const ms = ((usage(pid).cpu - cpu0) * 1000) / Math.max(1, approved);
  console.log(
    `warm-up (not measured): ${WARMUP_S} s, automine; ${first.name} approved ${approved}, ${ms.toFixed(1)} ms of CPU a payment; failures: ${failed}`,
  );
}

async function runMode(cluster: Cluster, agents: ClusterAgent[], mode: string, o: ThroughputOptions): Promise<ProfileWindow> {
  const direct = new JsonRpcProvider(cluster.chain.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  const interval = mode === "automine" ? 0 : Number(mode);
  await setBlockInterval(direct, interval);
  const payers = payersOf(cluster);
  const n = payers.length;
  const processes = [
    { name: "chain", pid: cluster.pids.chain },
    { name: "store", pid: cluster.pids.store },
    ...cluster.instances.map((i) => ({
      name: SELLER_APART && !payers.includes(i) ? `seller (${i.name})` : i.name,
      pid: i.child.pid ?? 0,
    })),
    { name: "client", pid: process.pid },
  ];
  // Each process's CPU while no payment runs (the indexer's polls, heartbeats, the chain's own timers), over IDLE_S:
  // subtracted as a rate, it leaves the CPU the payments themselves cost, which a loaded machine's lower rate of
  // payments would otherwise inflate (the same background is shared among fewer payments).
  const idleFrom = processes.map((p) => usage(p.pid).cpu);
  await new Promise((r) => setTimeout(r, IDLE_S * 1000));
  const idleRate = processes.map((p, k) => (usage(p.pid).cpu - idleFrom[k]) / IDLE_S);
  const cpuBefore = processes.map((p) => usage(p.pid).cpu);
  const latencies: number[] = [];
  const failures = new Map<string, number>();
  let approved = 0;
  const blocksBefore = await direct.getBlockNumber();
  await direct.send(STATS_METHOD, []);
  const started = Date.now();
  const from = profileClockNow();
  const deadline = started + o.seconds * 1000;
  let approvedFirst = 0; // approved by the profiled (first) instance
  await drive(cluster, agents, o.inFlight, deadline, (inst, ms, res) => {
    if (res.status === 200) {
      approved++;
      if (inst === payers[0]) approvedFirst++;
      latencies.push(ms);
    } else {
      const why = `${res.status} ${res.body.error ?? res.body.reason ?? ""}`.trim();
      failures.set(why, (failures.get(why) ?? 0) + 1);
    }
  });
  const to = profileClockNow();
  const elapsed = (Date.now() - started) / 1000;
  const served = (await direct.send(STATS_METHOD, [])) as RpcStats;
  const blocks = (await direct.getBlockNumber()) - blocksBefore;
  latencies.sort((x, y) => x - y);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)] ?? 0;
  const rate = approved / elapsed;
  console.log(
    `\n== ${n} instance${n > 1 ? "s" : ""}, ${interval ? `blocks every ${interval} ms` : "automine"}: ${approved} approved in ${elapsed.toFixed(1)} s = ${rate.toFixed(1)}/s (target >= 50: ${rate >= 50 ? "PASS" : "MISS"}); ${blocks} blocks (${(approved / Math.max(1, blocks)).toFixed(1)} payments a block)`,
  );
  console.log(
    `latency p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${q(1)} ms; failures: ${failures.size ? [...failures.entries()].map(([k, v]) => `${k}: ${v}`).join("; ") : "none"}`,
  );
  console.log(
    `CPU seconds in ${elapsed.toFixed(1)} s and memory at the end: ${processes
      .map((p, k) => {
        const u = usage(p.pid);
        const cpu = u.cpu - cpuBefore[k];
        const net = Math.max(0, cpu - idleRate[k] * elapsed);
        return `${p.name} ${cpu.toFixed(1)} s (${((cpu * 1000) / Math.max(1, approved)).toFixed(1)} ms a payment, ${((net * 1000) / Math.max(1, approved)).toFixed(1)} net of idle), rss ${u.rssMiB.toFixed(0)} MiB`;
      })
      .join("; ")}`,
  );
  console.log(`JSON-RPC served by the chain: ${formatStats(served, approved)}`);
  await setBlockInterval(direct, 0);
  direct.destroy();
  const cpuMsPerPayment = ((usage(processes[2].pid).cpu - cpuBefore[2]) * 1000) / Math.max(1, approvedFirst);
  const label = `${n} instance${n > 1 ? "s" : ""}${SELLER_APART ? " + seller apart" : ""}, ${interval ? `blocks every ${interval} ms` : "automine"}`;
  return { label, from, to, approved: approvedFirst, cpuMsPerPayment };
}

/** The profiled instance's profile, by window. */
function printProfiles(dir: string, name: string, windows: ProfileWindow[]): void {
  // The main thread's (the largest: tsx's module-hooks thread writes a small one of its own).
  const file = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .sort((a, b) => statSync(join(dir, b)).size - statSync(join(dir, a)).size)[0];
  if (!file) {
    console.log(`\n(no CPU profile was written by ${name} in ${dir})`);
    return;
  }
  const profile = readProfile(join(dir, file));
  for (const w of windows) {
    console.log(`\n-- CPU profile of ${name} (--cpu-prof), ${w.label}: ${w.approved} payments approved by it`);
    console.log(formatReport(analyse(profile, w), w.approved, w.cpuMsPerPayment));
  }
}

export async function throughputProcesses(o: ThroughputOptions, instanceCounts: number[]): Promise<void> {
  process.env.CHAIN_RPC_STATS = "1"; // the chain process inherits it
  for (const instances of instanceCounts) {
    const profDir = PROFILE ? mkdtempSync(join(tmpdir(), "spendgate-prof-")) : "";
    const cluster = await startCluster({
      instances: instances + (SELLER_APART ? 1 : 0),
      // The operator's gas allowance per owner (1e7 gwei by default against a chain of its own) stops each agent here (one
      // owner each, some 80,000 gas a payment at this chain's 1 gwei) after about 120 payments a day: with 10 agents, or
      // longer windows, the bench measured 429s. At Base's gas prices (hundredths of a gwei) it lasts thousands.
      env: { SELL_PRICE: "0.01", OWNER_GAS_ALLOWANCE_GWEI: "1e12" },
      instanceNodeArgs: (name) =>
        name === "instance-1" ? [...INSTANCE1_ARGS, ...(PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [])] : [],
    });
    const windows: ProfileWindow[] = [];
    try {
      const agents: ClusterAgent[] = [];
      for (let i = 0; i < o.agents; i += 10) {
        const batch = Array.from({ length: Math.min(10, o.agents - i) }, (_, j) =>
          onboardAgent(cluster.instances[(i + j) % instances].url, cluster.chain.chainId, {
            perTxLimit: "1",
            dailyBudget: "100000",
            approvalThreshold: "1",
            allowlist: ["127.0.0.1"],
          }),
        );
        agents.push(...(await Promise.all(batch)));
      }
      await fundAgents(
        cluster.chain.rpcUrl,
        cluster.chain.addresses.usdc,
        agents.map((a) => a.agentAddress),
        100_000_000_000n,
      );
      console.log(
        `\n${o.agents} agents, ${o.inFlight} payments in flight each, ${o.seconds} s per mode; chain, CongoDB and ${instances} SpendGate process(es) apart`,
      );
      await warmUp(cluster, agents, o);
      for (const mode of o.modes) windows.push(await runMode(cluster, agents, mode, o));
    } finally {
      await cluster.close();
    }
    if (PROFILE) {
      printProfiles(profDir, "instance-1", windows);
      if (process.env.THROUGHPUT_PROFILE_KEEP === "1") console.log(`(profile kept in ${profDir})`);
      else rmSync(profDir, { recursive: true, force: true });
    }
  }
}
