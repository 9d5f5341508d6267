/**
 * npm run bench, swap part: the latency of a POST /pay whose agent holds only WETH (authorise, swapForPayment on
 * Uniswap v3, x402 payment, settlement) next to one whose agent holds the USDC, interleaved, on the same stack.
 */
import type { Stack } from "../test/helpers/stack";
import { randomOwner } from "../test/helpers/stack";
import { mintUsdc, type TestSeller } from "../test/helpers/sellers";

const RUNS = Number(process.env.BENCH_SWAP_RUNS ?? 30);

export async function swapLatency(
  s: Stack,
  seller: TestSeller,
  stats: (samples: number[]) => { median: number; p95: number; min: number; max: number },
): Promise<void> {
  const policy = {
    perTxLimit: "1",
    dailyBudget: "1000",
    approvalThreshold: "1",
    allowlist: ["127.0.0.1"],
    maxSwapSlippageBps: 100,
    swapTwapSeconds: 600,
  };
  const owner = randomOwner();
  const plain = await s.onboard(owner, policy);
  const swapper = await s.onboard(owner, policy);
  await mintUsdc(s, plain.agentAddress, 1_000_000_000n);
  const faucet = await s.api("POST", "/dev/faucet", { body: { agentAddress: swapper.agentAddress, token: "WETH", amount: "10" } });
  if (faucet.status !== 200) throw new Error(`faucet answered ${faucet.status}`);
  const pay = (a: { agentAddress: string; apiKey: string }, swap: boolean) => async () => {
    const t = process.hrtime.bigint();
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "0.01", intent: "bench swap" },
    });
    if (res.status !== 200 || !!res.body.swap !== swap) throw new Error(`POST /pay answered ${res.status}: ${JSON.stringify(res.body)}`);
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const [withSwap, without] = [pay(swapper, true), pay(plain, false)];
  for (let i = 0; i < 3; i++) {
    await withSwap();
    await without();
  }
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    if (i % 2 === 0) {
      a.push(await withSwap());
      b.push(await without());
    } else {
      b.push(await without());
      a.push(await withSwap());
    }
  }
  const sw = stats(a);
  const no = stats(b);
  const fmt = (n: number) => n.toFixed(1).padStart(7);
  console.log("");
  console.log(`payments with a swap before settlement: ${RUNS} each, interleaved (the agent holds only WETH; 0.01 USDC bought each time)`);
  console.log(`                       median      p95      min      max   (ms)`);
  console.log(`POST /pay with swap  ${fmt(sw.median)}  ${fmt(sw.p95)}  ${fmt(sw.min)}  ${fmt(sw.max)}`);
  console.log(`POST /pay, USDC held ${fmt(no.median)}  ${fmt(no.p95)}  ${fmt(no.min)}  ${fmt(no.max)}`);
  console.log(`the swap adds (median) ${(sw.median - no.median).toFixed(1)} ms`);
  const phases: Record<string, number[]> = {};
  for (const line of s.logs) {
    const entry = JSON.parse(line) as { msg?: string; ms?: Record<string, number> };
    if (entry.msg !== "payment approved" || !entry.ms || entry.ms.swap === undefined) continue;
    for (const [k, v] of Object.entries(entry.ms)) (phases[k] ??= []).push(v);
  }
  console.log(
    `where a payment with a swap spends its time (median ms per phase): ${Object.entries(phases)
      .map(([k, v]) => `${k} ${stats(v).median.toFixed(1)}`)
      .join(", ")}`,
  );
}
