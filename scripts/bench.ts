/**
 * npm run bench: latency of an approved POST /pay (policy read, quote, simulation, on-chain authorisation, x402
 * payment, settlement, ledger) next to a bare @x402/fetch payment to the same seller on the same chain, measured
 * side by side (interleaved) in one run, under several chain conditions:
 *   - automine: every transaction mined at once (target: SpendGate / bare <= 2.0 at the median);
 *   - Base-like: blocks every 2000 ms and every 200 ms (interval mining, as Base and its flashblocks), with a latency
 *     of BENCH_RPC_LATENCY_MS (30) on every JSON-RPC call (target on 2 s blocks: at most one block + 150 ms slower).
 * Every JSON-RPC call of both sides (SpendGate, its facilitator and the seller's) goes through one loopback proxy that
 * adds the latency and counts the calls; "block waits" are the transactions a payment had to wait for. Then the MCP
 * read tools' p50 and GET /ledger's p95 with 100,000 entries (scripts/bench/reads.ts).
 * BENCH_MODES=automine,2000,200 picks modes; BENCH_RUNS (60) / BENCH_RUNS_BLOCKS (12) the payments per side.
 */
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { JsonRpcProvider } from "ethers";
import { viemAccounts } from "../src/chain/viem";
import { startEmbeddedChain } from "../src/chain/embedded";
import { randomOwner, startStack } from "../test/helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller } from "../test/helpers/sellers";
import { swapLatency } from "./bench-swap";
import { setBlockInterval } from "./bench/mining";
import { startRpcProxy } from "./bench/rpcProxy";
import { benchReads } from "./bench/reads";

const WARMUP = 3;
const RUNS = Number(process.env.BENCH_RUNS ?? 60);
const RUNS_BLOCKS = Number(process.env.BENCH_RUNS_BLOCKS ?? 12);
const LATENCY = Number(process.env.BENCH_RPC_LATENCY_MS ?? 30);
const MODES = (process.env.BENCH_MODES ?? "automine,2000,200").split(",").map((m) => m.trim());

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return { median: q(0.5), p95: q(0.95), min: sorted[0], max: sorted[sorted.length - 1] };
}

interface Sample {
  ms: number;
  rpc: number;
  blockWaits: number;
}

async function main(): Promise<void> {
  const chain = await startEmbeddedChain();
  const proxy = await startRpcProxy(chain.rpcUrl);
  const direct = new JsonRpcProvider(chain.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  // Everything the service and the facilitators do on the chain goes through the proxy.
  const s = await startStack({ RATE_LIMIT_PER_MINUTE: "1000000" }, { embeddedChain: { ...chain, rpcUrl: proxy.url } });
  const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 10_000n });
  const agent = await s.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "1000", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
  await mintUsdc(s, agent.agentAddress, 1_000_000_000n);

  const account = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey());
  await mintUsdc(s, account.address, 1_000_000_000n);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  const paidFetch = wrapFetchWithPayment(fetch, client);

  const viaSpendGate = async () => {
    const res = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "0.01", intent: "bench" },
    });
    if (res.status !== 200) throw new Error(`POST /pay answered ${res.status}: ${JSON.stringify(res.body)}`);
  };
  const bare = async () => {
    const res = await paidFetch(seller.resource);
    if (res.status !== 200) throw new Error(`bare x402 fetch answered ${res.status}`);
    await res.text();
  };
  const timed = async (fn: () => Promise<void>): Promise<Sample> => {
    const before = proxy.total();
    const sent = proxy.counts.get("eth_sendRawTransaction") ?? 0;
    const t = process.hrtime.bigint();
    await fn();
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    return { ms, rpc: proxy.total() - before, blockWaits: (proxy.counts.get("eth_sendRawTransaction") ?? 0) - sent };
  };
  const methodsOf = async (fn: () => Promise<void>) => {
    const before = new Map(proxy.counts);
    await fn();
    return [...proxy.counts]
      .map(([m, n]) => [m, n - (before.get(m) ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .map(([m, n]) => `${m} ${n}`)
      .join(", ");
  };
  // The indexer's polling is no part of a payment: it is paused so the proxy counts only the two sides' calls.
  await s.svc.indexer.stop();
  const fmt = (n: number) => n.toFixed(1).padStart(7);
  const summary: string[] = [];
  for (const mode of MODES) {
    const interval = mode === "automine" ? 0 : Number(mode);
    const latency = interval ? LATENCY : 0;
    await setBlockInterval(direct, interval);
    proxy.setLatency(latency);
    const runs = interval ? RUNS_BLOCKS : RUNS;
    for (let i = 0; i < WARMUP; i++) {
      await viaSpendGate();
      await bare();
    }
    const a: Sample[] = [];
    const b: Sample[] = [];
    // On interval blocks a payment that starts right after another one ends would start at a fixed phase of the block:
    // each starts after a random pause instead (not timed), as requests arrive.
    const dephase = () => (interval ? new Promise((r) => setTimeout(r, Math.random() * interval)) : Promise.resolve());
    const timedAt = async (fn: () => Promise<void>) => {
      await dephase();
      return timed(fn);
    };
    for (let i = 0; i < runs; i++) {
      // Alternate which goes first so neither benefits from the other's warm caches.
      if (i % 2 === 0) {
        a.push(await timedAt(viaSpendGate));
        b.push(await timedAt(bare));
      } else {
        b.push(await timedAt(bare));
        a.push(await timedAt(viaSpendGate));
      }
    }
    if (process.env.BENCH_METHODS === "1") {
      console.log(`  SpendGate calls: ${await methodsOf(viaSpendGate)}`);
      console.log(`  bare calls:      ${await methodsOf(bare)}`);
    }
    const sg = stats(a.map((x) => x.ms));
    const x = stats(b.map((y) => y.ms));
    const title = interval ? `blocks every ${interval} ms, ${latency} ms on every JSON-RPC call` : "automine, no added RPC latency";
    console.log(`\n== ${title}: ${runs} payments each, interleaved, after ${WARMUP} warm-up rounds`);
    console.log(`                       median      p95      min      max   (ms)   RPC calls  block waits (median per payment)`);
    console.log(
      `SpendGate POST /pay  ${fmt(sg.median)}  ${fmt(sg.p95)}  ${fmt(sg.min)}  ${fmt(sg.max)}        ${String(stats(a.map((y) => y.rpc)).median).padStart(4)}  ${String(stats(a.map((y) => y.blockWaits)).median).padStart(11)}`,
    );
    console.log(
      `bare @x402/fetch     ${fmt(x.median)}  ${fmt(x.p95)}  ${fmt(x.min)}  ${fmt(x.max)}        ${String(stats(b.map((y) => y.rpc)).median).padStart(4)}  ${String(stats(b.map((y) => y.blockWaits)).median).padStart(11)}`,
    );
    if (interval) {
      const over = sg.median - x.median;
      const target = interval + 150;
      console.log(
        `SpendGate - bare (median) ${over.toFixed(0)} ms; target <= one block + 150 ms = ${target} ms: ${over <= target ? "PASS" : "MISS"}`,
      );
      summary.push(`${interval} ms blocks: +${over.toFixed(0)} ms (target ${target}) ${over <= target ? "PASS" : "MISS"}`);
    } else {
      const ratio = sg.median / x.median;
      console.log(
        `ratio (median) ${ratio.toFixed(2)}, target <= 2.0: ${ratio <= 2.0 ? "PASS" : "MISS"}; ratio (p95) ${(sg.p95 / x.p95).toFixed(2)}`,
      );
      summary.push(`automine: ratio ${ratio.toFixed(2)} (target 2.0) ${ratio <= 2.0 ? "PASS" : "MISS"}`);
    }
  }
  await direct.send("evm_setIntervalMining", [0]);
  await direct.send("evm_setAutomine", [true]);
  proxy.setLatency(0);

  const phases: Record<string, number[]> = {};
  for (const line of s.logs) {
    const entry = JSON.parse(line) as { msg?: string; ms?: Record<string, number> };
    if (entry.msg !== "payment approved" || !entry.ms) continue;
    for (const [k, v] of Object.entries(entry.ms)) (phases[k] ??= []).push(v);
  }
  console.log(
    `\nwhere POST /pay spends its time, all modes (median ms per phase): ${Object.entries(phases)
      .map(([k, v]) => `${k} ${stats(v).median.toFixed(1)}`)
      .join(", ")}`,
  );
  console.log(`summary: ${summary.join("; ")}`);
  console.log(
    `rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`,
  );
  await swapLatency(s, seller, stats);
  if (process.env.BENCH_READS !== "0") await benchReads(s, agent);
  await seller.close();
  await s.close();
  direct.destroy();
  await proxy.close();
  await chain.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
