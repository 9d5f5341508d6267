/**
 * npm run bench: latency of an approved POST /pay (policy read, quote, simulation, on-chain authorisation, x402
 * payment, settlement, ledger) next to a bare @x402/fetch payment to the same seller on the same chain, measured
 * side by side (interleaved) in one run. Target: SpendGate / bare <= 1.5 at the median.
 */
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { viemAccounts } from "../src/chain/viem";
import { randomOwner, startStack } from "../test/helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller } from "../test/helpers/sellers";
import { swapLatency } from "./bench-swap";

const WARMUP = 5;
const RUNS = Number(process.env.BENCH_RUNS ?? 60);

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return { median: q(0.5), p95: q(0.95), min: sorted[0], max: sorted[sorted.length - 1] };
}

async function main(): Promise<void> {
  const s = await startStack({ RATE_LIMIT_PER_MINUTE: "100000" }); // logs go to s.logs (the phase timings below)
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

  const timed = async (fn: () => Promise<void>) => {
    const t = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  for (let i = 0; i < WARMUP; i++) {
    await viaSpendGate();
    await bare();
  }
  const stalls: number[] = [];
  let last = Date.now();
  const lagTimer = setInterval(() => {
    const now = Date.now();
    if (now - last > 50) stalls.push(now - last);
    last = now;
  }, 5);
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    // Alternate which goes first so neither benefits from the other's warm caches.
    if (i % 2 === 0) {
      a.push(await timed(viaSpendGate));
      b.push(await timed(bare));
    } else {
      b.push(await timed(bare));
      a.push(await timed(viaSpendGate));
    }
  }
  clearInterval(lagTimer);
  const sg = stats(a);
  const x = stats(b);
  const fmt = (n: number) => n.toFixed(1).padStart(7);
  console.log(`payments: ${RUNS} each, interleaved, after ${WARMUP} warm-up rounds; embedded chain (automine), loopback seller`);
  console.log(`                       median      p95      min      max   (ms)`);
  console.log(`SpendGate POST /pay  ${fmt(sg.median)}  ${fmt(sg.p95)}  ${fmt(sg.min)}  ${fmt(sg.max)}`);
  console.log(`bare @x402/fetch     ${fmt(x.median)}  ${fmt(x.p95)}  ${fmt(x.min)}  ${fmt(x.max)}`);
  const ratio = sg.median / x.median;
  console.log(`ratio (median)        ${ratio.toFixed(2)}   target <= 1.5: ${ratio <= 1.5 ? "PASS" : "MISS"}`);
  console.log(`ratio (p95)           ${(sg.p95 / x.p95).toFixed(2)}`);
  const phases: Record<string, number[]> = {};
  for (const line of s.logs) {
    const entry = JSON.parse(line) as { msg?: string; ms?: Record<string, number> };
    if (entry.msg !== "payment approved" || !entry.ms) continue;
    for (const [k, v] of Object.entries(entry.ms)) (phases[k] ??= []).push(v);
  }
  console.log(`where POST /pay spends its time (median ms per phase): ${Object.entries(phases).map(([k, v]) => `${k} ${stats(v).median.toFixed(1)} (max ${stats(v).max.toFixed(0)})`).join(", ")}`);
  console.log(`event-loop stalls over 50 ms during the run: ${stalls.length ? stalls.join(", ") + " ms" : "none"}`);
  console.log(`rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`);
  await swapLatency(s, seller, stats);
  await seller.close();
  await s.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
