/**
 * npm run bench: latency of an approved POST /pay (policy read, quote, simulation, on-chain authorisation, x402
 * payment, settlement, ledger) next to a bare @x402/fetch payment to the same seller on the same chain, measured
 * side by side (interleaved) in one run, under several chain conditions:
 *   - automine: every transaction mined at once (target: SpendGate / bare <= 2.0 at the median);
 *   - Base-like: blocks every 2000 ms and every 200 ms (interval mining, as Base and its flashblocks), with a latency
 *     of BENCH_RPC_LATENCY_MS (30) on every JSON-RPC call (target on 2 s blocks: at most one block + 150 ms slower).
 * Every JSON-RPC call of both sides (SpendGate, its facilitator and the seller's) goes through one loopback proxy that
 * adds the latency and counts the calls; "block waits" are the transactions a payment had to wait for. Then, in the same
 * modes, the other schemes (scripts/bench/schemes.ts; BENCH_SCHEMES=0 skips them): batch-settlement vouchers through
 * POST /pay vs the stock batch-settlement client on one stock seller, and upto vs exact. Then the MCP read tools' p50
 * and GET /ledger's p95 with 100,000 entries (scripts/bench/reads.ts).
 * Each section also counts, at automine, the store commands and JSON-RPC calls SpendGate itself makes per payment
 * (scripts/bench/counts.ts: its MongoDB client's command monitoring and its JSON-RPC client's observer), printed as
 * `exact: N store commands, M JSON-RPC calls` and `voucher: N store commands, 0 chain calls, overhead p50 X ms`.
 * BENCH_SECTIONS=exact,schemes,swap,reads picks sections (all by default).
 * BENCH_MODES=automine,2000,200 picks modes; BENCH_RUNS (60) / BENCH_RUNS_BLOCKS (12) the payments per side. The chain
 * runs in its own thread as `npm start` runs it (both sides use the same chain; BENCH_CHAIN=inprocess puts it on this one).
 */
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { randomBytes } from "node:crypto";
import { JsonRpcProvider } from "ethers";
import { viemAccounts } from "../src/chain/viem";
import { startEmbeddedChain } from "../src/dev/embeddedChain";
import { startEmbeddedChainThread } from "../src/dev/embeddedChainThread";
import { startEmbeddedMongo } from "../src/dev/embeddedStore";
import { randomOwner, startStack } from "../test/helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller } from "../test/helpers/sellers";
import { swapLatency } from "./bench-swap";
import { CommandCounter, countedStoreUri } from "./bench/counts";
import { setBlockInterval } from "./bench/mining";
import { startRpcProxy } from "./bench/rpcProxy";
import { benchReads } from "./bench/reads";
import { CHANNEL_DEPOSIT_BENCH, schemeLatency } from "./bench/schemes";
import { ROW_HEADER, interleavedPairs, row, stats } from "./bench/sampling";

const WARMUP = 3;
const RUNS = Number(process.env.BENCH_RUNS ?? 60);
const RUNS_BLOCKS = Number(process.env.BENCH_RUNS_BLOCKS ?? 12);
const LATENCY = Number(process.env.BENCH_RPC_LATENCY_MS ?? 30);
const MODES = (process.env.BENCH_MODES ?? "automine,2000,200").split(",").map((m) => m.trim());
const SECTIONS = (process.env.BENCH_SECTIONS ?? "exact,schemes,swap,reads").split(",").map((m) => m.trim());
/** Payments counted one by one (store commands and JSON-RPC calls) per section. */
const COUNTED = Number(process.env.BENCH_COUNTED ?? 30);

async function main(): Promise<void> {
  const chain = process.env.BENCH_CHAIN === "inprocess" ? await startEmbeddedChain() : await startEmbeddedChainThread();
  const proxy = await startRpcProxy(chain.rpcUrl);
  const direct = new JsonRpcProvider(chain.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  // Everything the service and the facilitators do on the chain goes through the proxy.
  // API_KEY_CACHE_MS=0 measures the reads with every call reading its key from the store.
  const keyMemory: Record<string, string> =
    process.env.API_KEY_CACHE_MS === undefined ? {} : { API_KEY_CACHE_MS: process.env.API_KEY_CACHE_MS };
  // The embedded store on this thread, as startStack starts it, with its client reporting every command it sends.
  const mongo = await startEmbeddedMongo();
  const store = {
    MONGODB_URI: countedStoreUri(mongo.uri),
    MONGODB_DB: `bench_${randomBytes(4).toString("hex")}`,
    WALLET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
  };
  // Channel deposits of CHANNEL_DEPOSIT_BENCH requests, so the scheme section measures vouchers (exact is unaffected).
  const s = await startStack(
    { RATE_LIMIT_PER_MINUTE: "1000000", CHANNEL_DEPOSIT_REQUESTS: String(CHANNEL_DEPOSIT_BENCH), ...keyMemory, ...store },
    { embeddedChain: { ...chain, rpcUrl: proxy.url } },
  );
  const counter = new CommandCounter(s.svc);
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
  const summary: string[] = [];
  const logSpans = new Map<string, [number, number]>();
  for (const mode of SECTIONS.includes("exact") ? MODES : []) {
    const logsFrom = s.logs.length;
    const interval = mode === "automine" ? 0 : Number(mode);
    const latency = interval ? LATENCY : 0;
    await setBlockInterval(direct, interval);
    proxy.setLatency(latency);
    const runs = interval ? RUNS_BLOCKS : RUNS;
    for (let i = 0; i < WARMUP; i++) {
      await viaSpendGate();
      await bare();
    }
    // On interval blocks how long a payment waits depends on when in the block interval it starts. Each pair starts at
    // one random point of the interval, the same for both sides (a new block seen, then the pause, not timed), so the
    // two are compared at the same arrival phase: the difference then shows what SpendGate adds, not which side was
    // luckier with the block clock (with independent random phases, 20 pairs moved the median difference by +-300 ms).
    // Alternate which goes first so neither benefits from the other's warm caches.
    const [a, b] = await interleavedPairs(direct, proxy, interval, runs, viaSpendGate, bare);
    if (process.env.BENCH_METHODS === "1") {
      console.log(`  SpendGate calls: ${await methodsOf(viaSpendGate)}`);
      console.log(`  bare calls:      ${await methodsOf(bare)}`);
    }
    logSpans.set(interval ? `${interval} ms` : mode, [logsFrom, s.logs.length]);
    const sg = stats(a.map((x) => x.ms));
    const x = stats(b.map((y) => y.ms));
    const where = process.env.BENCH_CHAIN === "inprocess" ? "chain on this thread" : "chain in its own thread";
    const title = `${interval ? `blocks every ${interval} ms, ${latency} ms on every JSON-RPC call` : "automine, no added RPC latency"} (${where})`;
    console.log(`\n== ${title}: ${runs} payments each, interleaved, after ${WARMUP} warm-up rounds`);
    console.log(ROW_HEADER);
    console.log(row("SpendGate POST /pay", a));
    console.log(row("bare @x402/fetch", b));
    if (interval) {
      const paired = stats(a.map((y, i) => y.ms - b[i].ms));
      console.log(`SpendGate - bare, pair by pair (same phase): median ${paired.median.toFixed(0)} ms, p95 ${paired.p95.toFixed(0)} ms`);
      const over = paired.median;
      const target = interval + 150;
      console.log(
        `difference of the medians ${(sg.median - x.median).toFixed(0)} ms; target (pair by pair) <= one block + 150 ms = ${target} ms: ${over <= target ? "PASS" : "MISS"}`,
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

  if (SECTIONS.includes("exact")) {
    console.log("\nwhere POST /pay spends its time (median ms per phase, from the payment log):");
    for (const [mode, [from, to]] of logSpans) console.log(`  ${mode.padEnd(8)} ${phaseMedians(s.logs.slice(from, to))}`);
    console.log(`summary: ${summary.join("; ")}`);
    // Counted one payment at a time, at automine: what SpendGate itself asks of the store and the chain per payment.
    for (let i = 0; i < WARMUP; i++) await viaSpendGate();
    const counted = await counter.perPayment(viaSpendGate, COUNTED);
    console.log(`\nexact: ${counted.store} store commands, ${counted.rpc} JSON-RPC calls (by SpendGate, per payment: the median)`);
    console.log(counted.summary);
  }
  console.log(
    `rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`,
  );
  if (SECTIONS.includes("swap")) await swapLatency(s, seller, stats);
  if (SECTIONS.includes("schemes") && process.env.BENCH_SCHEMES !== "0") {
    const opts = { modes: MODES, latency: LATENCY, runs: RUNS, runsBlocks: RUNS_BLOCKS, counted: COUNTED };
    const schemes = await schemeLatency(s, proxy, direct, counter, opts);
    console.log(`
schemes summary: ${schemes.join("; ")}`);
  }
  if (SECTIONS.includes("reads") && process.env.BENCH_READS !== "0") await benchReads(s, agent, mongo);
  await seller.close();
  await s.close();
  await mongo.stop();
  direct.destroy();
  await proxy.close();
  await chain.close();
}

/** Median per phase over the "payment approved" log lines among `lines`. */
function phaseMedians(lines: string[]): string {
  const phases: Record<string, number[]> = {};
  for (const line of lines) {
    const entry = JSON.parse(line) as { msg?: string; ms?: Record<string, number> };
    if (entry.msg !== "payment approved" || !entry.ms) continue;
    for (const [k, v] of Object.entries(entry.ms)) (phases[k] ??= []).push(v);
  }
  return Object.entries(phases)
    .map(([k, v]) => `${k} ${stats(v).median.toFixed(1)}`)
    .join(", ");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
