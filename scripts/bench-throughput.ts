/**
 * npm run bench:throughput: approved payments per second across THROUGHPUT_AGENTS (50) agents with THROUGHPUT_IN_FLIGHT
 * (2) payments in flight each, for THROUGHPUT_SECONDS (20) per chain mode: automine, and blocks every 200 ms (interval
 * mining, as Base's flashblocks). Target: at least 50 approved payments/s on this 2-core machine. Prints latency, every
 * failure by reason, and the process memory at the end. Two shapes, one after the other: everything in this one process
 * (seller and service, with the chain and the store each in its own worker thread as `npm start` runs them;
 * THROUGHPUT_CHAIN=inprocess or THROUGHPUT_STORE=inprocess puts one on the service's thread, as before), then the production shape (chain, store and THROUGHPUT_INSTANCES SpendGate
 * instances in their own processes, scripts/bench/throughputCluster.ts). THROUGHPUT_SHAPE=inprocess or =processes runs one.
 */
import { JsonRpcProvider } from "ethers";
import { setBlockInterval } from "./bench/mining";
import { startEmbeddedChain } from "../src/dev/embeddedChain";
import { startEmbeddedChainThread } from "../src/dev/embeddedChainThread";
import { randomOwner, startStack } from "../test/helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller } from "../test/helpers/sellers";
import { throughputProcesses, usage } from "./bench/throughputCluster";

const AGENTS = Number(process.env.THROUGHPUT_AGENTS ?? 50);
const IN_FLIGHT = Number(process.env.THROUGHPUT_IN_FLIGHT ?? 2);
const SECONDS = Number(process.env.THROUGHPUT_SECONDS ?? 20);
const MODES = (process.env.THROUGHPUT_MODES ?? "automine,200").split(",").map((m) => m.trim());
const CHAIN_THREAD = process.env.THROUGHPUT_CHAIN !== "inprocess";
const STORE_THREAD = process.env.THROUGHPUT_STORE !== "inprocess";

async function main(): Promise<void> {
  const shape = process.env.THROUGHPUT_SHAPE;
  if (shape !== "processes") await inProcess();
  if (shape !== "inprocess") {
    const counts = (process.env.THROUGHPUT_INSTANCES ?? "1,2").split(",").map(Number);
    await throughputProcesses({ agents: AGENTS, inFlight: IN_FLIGHT, seconds: SECONDS, modes: MODES }, counts);
  }
}

async function inProcess(): Promise<void> {
  const chain = CHAIN_THREAD ? await startEmbeddedChainThread() : await startEmbeddedChain();
  const direct = new JsonRpcProvider(chain.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  const s = await startStack({ RATE_LIMIT_PER_MINUTE: "1000000", LOG_LEVEL: "warn" }, { embeddedChain: chain, storeThread: STORE_THREAD });
  const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 10_000n });
  const agents = [];
  for (let i = 0; i < AGENTS; i += 10) {
    agents.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(10, AGENTS - i) }, () =>
          s.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "100000", approvalThreshold: "1", allowlist: ["127.0.0.1"] }),
        ),
      )),
    );
  }
  for (const a of agents) await mintUsdc(s, a.agentAddress, 100_000_000_000n);
  const where = (on: boolean) => (on ? "in its own thread" : "on the service's thread");
  console.log(
    `${AGENTS} agents, ${IN_FLIGHT} payments in flight each, ${SECONDS} s per mode; one process: service and loopback v2 seller, chain ${where(CHAIN_THREAD)}, CongoDB ${where(STORE_THREAD)}${CHAIN_THREAD && STORE_THREAD ? " (as npm start)" : ""}`,
  );
  for (const mode of MODES) {
    const interval = mode === "automine" ? 0 : Number(mode);
    await setBlockInterval(direct, interval);
    const latencies: number[] = [];
    const failures = new Map<string, number>();
    let approved = 0;
    const started = Date.now();
    const cpuBefore = process.cpuUsage();
    // The main thread's own CPU (its task in /proc has the process id): the event loop every payment's service work
    // shares, so 1000 / its ms a payment bounds the rate whatever the other threads do.
    const mainBefore = usage(process.pid, process.pid).cpu;
    const deadline = started + SECONDS * 1000;
    const blocksBefore = await direct.getBlockNumber();
    await Promise.all(
      agents.flatMap((a) =>
        Array.from({ length: IN_FLIGHT }, async () => {
          while (Date.now() < deadline) {
            const t = Date.now();
            const res = await s.api("POST", "/pay", {
              key: a.apiKey,
              body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "0.01", intent: "throughput" },
            });
            if (res.status === 200) {
              approved++;
              latencies.push(Date.now() - t);
            } else {
              const why = `${res.status} ${res.body?.error ?? res.body?.reason ?? ""}`.trim();
              failures.set(why, (failures.get(why) ?? 0) + 1);
            }
          }
        }),
      ),
    );
    const elapsed = (Date.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const mainMs = ((usage(process.pid, process.pid).cpu - mainBefore) * 1000) / Math.max(1, approved);
    const blocks = (await direct.getBlockNumber()) - blocksBefore;
    latencies.sort((x, y) => x - y);
    const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)] ?? 0;
    const rate = approved / elapsed;
    console.log(
      `\n== ${interval ? `blocks every ${interval} ms` : "automine"}: ${approved} approved in ${elapsed.toFixed(1)} s = ${rate.toFixed(1)}/s (target >= 50: ${rate >= 50 ? "PASS" : "MISS"}); ${blocks} blocks (${(approved / Math.max(1, blocks)).toFixed(1)} payments a block)`,
    );
    console.log(
      `latency p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${q(1)} ms; CPU ${((cpu.user + cpu.system) / 1000 / Math.max(1, approved)).toFixed(2)} ms a payment (this process, all threads), of which ${mainMs.toFixed(2)} ms on the main thread (ceiling ${(1000 / Math.max(0.01, mainMs)).toFixed(0)}/s); failures: ${failures.size ? [...failures.entries()].map(([k, v]) => `${k}: ${v}`).join("; ") : "none"}`,
    );
    const m = process.memoryUsage();
    console.log(
      `memory at the end: rss ${(m.rss / 2 ** 20).toFixed(0)} MiB (the whole process), heap ${(m.heapUsed / 2 ** 20).toFixed(0)} MiB (${CHAIN_THREAD || STORE_THREAD ? "this thread's: the others have their own" : "chain, store, seller and service"})`,
    );
  }
  await direct.send("evm_setIntervalMining", [0]);
  await direct.send("evm_setAutomine", [true]);
  await seller.close();
  await s.close();
  direct.destroy();
  await chain.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
