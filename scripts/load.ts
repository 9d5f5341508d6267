/**
 * npm run load: a sustained load on the embedded sandbox. LOAD_AGENTS agents (default 50) each pay a loopback x402
 * seller in a loop for LOAD_SECONDS (default 60); prints approved payments per second, latency, every failure by
 * reason, and whether the chain's clock stayed level with the wall clock (the sandbox must stay correct under load).
 */
import { randomOwner, startStack } from "../test/helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller } from "../test/helpers/sellers";

const AGENTS = Number(process.env.LOAD_AGENTS ?? 50);
const SECONDS = Number(process.env.LOAD_SECONDS ?? 60);

async function main(): Promise<void> {
  const s = await startStack({ RATE_LIMIT_PER_MINUTE: "1000000" });
  const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 10_000n });
  const agents = [];
  for (let i = 0; i < AGENTS; i++) {
    const a = await s.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "100000", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 100_000_000_000n);
    agents.push(a);
  }
  const latencies: number[] = [];
  const failures = new Map<string, number>();
  let approved = 0;
  const started = Date.now();
  const deadline = started + SECONDS * 1000;
  let maxAhead = 0;
  const clock = setInterval(async () => {
    const block = await s.svc.chain.provider.getBlock("latest").catch(() => null);
    if (block) maxAhead = Math.max(maxAhead, block.timestamp - Math.floor(Date.now() / 1000));
  }, 1000);
  await Promise.all(
    agents.map(async (a) => {
      while (Date.now() < deadline) {
        const t = Date.now();
        const res = await s.api("POST", "/pay", {
          key: a.apiKey,
          body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "0.01", intent: "load" },
        });
        if (res.status === 200) {
          approved++;
          latencies.push(Date.now() - t);
        } else {
          const why = `${res.status} ${res.body?.error ?? res.body?.reason ?? ""} ${res.body?.details?.reason ?? ""}`.trim();
          failures.set(why, (failures.get(why) ?? 0) + 1);
        }
      }
    }),
  );
  clearInterval(clock);
  const elapsed = (Date.now() - started) / 1000;
  latencies.sort((x, y) => x - y);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)] ?? 0;
  const blocks = await s.svc.chain.provider.getBlockNumber();
  console.log(`load: ${AGENTS} agents paying for ${elapsed.toFixed(1)} s on the embedded chain (automine), loopback v2 seller`);
  console.log(`approved: ${approved} (${(approved / elapsed).toFixed(1)}/s); latency p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${q(1)} ms`);
  console.log(
    `failures: ${[...failures.values()].reduce((x, y) => x + y, 0)}${failures.size ? ` (${[...failures.entries()].map(([k, v]) => `${k}: ${v}`).join("; ")})` : ""}`,
  );
  console.log(`chain: ${blocks} blocks; latest block at most ${maxAhead} s ahead of the wall clock`);
  console.log(`memory: rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`);
  await seller.close();
  await s.close();
  if (failures.size) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
