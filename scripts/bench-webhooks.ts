/**
 * npx tsx scripts/bench-webhooks.ts: owner alerts by webhook, measured on the embedded stack with a real local
 * receiver. (1) Outbox and worker: events queued back to back, delivered by one worker and then by two workers on one
 * store: deliveries per second, and the time from enqueue to arrival. (2) The cost on the payment path: approved
 * POST /pay latency for an owner with no endpoint and for one subscribed to every event, interleaved.
 */
import pino from "pino";
import { randomOwner, startStack } from "../test/helpers/stack";
import { ownerKey } from "../test/helpers/owner";
import { startReceiver } from "../test/helpers/receiver";
import { fundedFacilitator, mintUsdc, startV2Seller } from "../test/helpers/sellers";
import { WEBHOOK_EVENT_TYPES } from "../src/schemas/webhooks";
import { WebhookWorker } from "../src/webhooks/worker";
import { webhookSecretKey } from "../src/webhooks/secrets";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 500);
const PAYMENTS = Number(process.env.BENCH_RUNS ?? 40);
const KEY = "11".repeat(32);

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return { median: q(0.5), p95: q(0.95), max: sorted[sorted.length - 1] };
}
const ms = (n: number) => `${n.toFixed(1)} ms`;

async function main(): Promise<void> {
  const s = await startStack({ WALLET_ENCRYPTION_KEY: KEY, RATE_LIMIT_PER_MINUTE: "100000", WEBHOOK_POLL_MS: "1000" });
  const receiver = await startReceiver();
  const owner = randomOwner();
  const key = await ownerKey(s, owner);
  const ep = await s.api("POST", "/webhooks", { key, body: { url: receiver.url, events: [...WEBHOOK_EVENT_TYPES] } });
  if (ep.status !== 201) throw new Error(`webhook registration: ${ep.status} ${JSON.stringify(ep.body)}`);
  const outbox = s.svc.webhooks.outbox;
  const quiet = pino({ level: "silent" });

  // (1) Throughput: the service's own worker is stopped; 1 then 2 fresh workers drain EVENTS queued events.
  await s.svc.webhooks.worker.stop();
  for (const workers of [1, 2]) {
    const queuedAt = new Map<string, number>();
    for (let i = 0; i < EVENTS; i++) {
      const id = await outbox.emit({
        type: "agent.paused",
        dedupeKey: `bench:${workers}:${i}`,
        ownerAddress: owner.address,
        agentAddress: null,
        data: { i },
      });
      queuedAt.set(id!, performance.now());
    }
    const before = receiver.requests.length;
    const started = performance.now();
    const ws = Array.from(
      { length: workers },
      () =>
        new WebhookWorker(
          outbox,
          webhookSecretKey(KEY),
          { allowHttp: true, allowPrivate: true, timeoutMs: 5_000, backoffBaseMs: 1_000, pollMs: 1_000 },
          quiet,
        ),
    );
    ws.forEach((w) => w.start());
    await receiver.until((r) => r.length - before >= EVENTS, 120_000);
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(ws.map((w) => w.stop()));
    const got = receiver.requests.slice(before);
    const dup = got.length - new Set(got.map((r) => r.body.id)).size;
    console.log(
      `worker(s): ${workers}  ${EVENTS} deliveries in ${seconds.toFixed(2)} s = ${(EVENTS / seconds).toFixed(0)}/s  duplicates: ${dup}  attempts per worker: ${ws.map((w) => w.attempted).join("/")}`,
    );
  }

  // Enqueue to arrival with the service's worker woken by the enqueue (as for approval.requested).
  s.svc.webhooks.worker.start();
  const lat: number[] = [];
  for (let i = 0; i < 100; i++) {
    const before = receiver.requests.length;
    const t = performance.now();
    await outbox.emit({
      type: "agent.paused",
      dedupeKey: `bench:latency:${i}`,
      ownerAddress: owner.address,
      agentAddress: null,
      data: { i },
    });
    await receiver.until((r) => r.length > before);
    lat.push(performance.now() - t);
  }
  const l = stats(lat);
  console.log(`enqueue -> received (100 events, one at a time): median ${ms(l.median)}, p95 ${ms(l.p95)}, max ${ms(l.max)}`);

  // (2) Payment path: two owners, one without endpoints, one with every event subscribed; interleaved.
  const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 10_000n });
  const policy = { perTxLimit: "1", dailyBudget: "1000", approvalThreshold: "1", allowlist: ["127.0.0.1"] };
  const silent = await s.onboard(randomOwner(), policy);
  const watched = await s.onboard(owner, policy);
  for (const a of [silent, watched]) await mintUsdc(s, a.agentAddress, 1_000_000_000n);
  const pay = async (a: typeof silent) => {
    const t = performance.now();
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "bench" },
    });
    if (res.status !== 200) throw new Error(`pay: ${res.status} ${JSON.stringify(res.body)}`);
    return performance.now() - t;
  };
  for (let i = 0; i < 5; i++) await pay(i % 2 ? silent : watched);
  const none: number[] = [];
  const all: number[] = [];
  for (let i = 0; i < PAYMENTS; i++) {
    none.push(await pay(silent));
    all.push(await pay(watched));
  }
  const [a, b] = [stats(none), stats(all)];
  console.log(`POST /pay approved, owner without endpoints: median ${ms(a.median)}, p95 ${ms(a.p95)}`);
  console.log(
    `POST /pay approved, owner subscribed to every event: median ${ms(b.median)}, p95 ${ms(b.p95)}  (+${ms(b.median - a.median)} at the median)`,
  );
  await receiver.until((r) => r.filter((x) => x.body.type === "payment.approved").length >= PAYMENTS + 2, 30_000).catch(() => undefined);
  console.log(`payment.approved deliveries received: ${receiver.requests.filter((x) => x.body.type === "payment.approved").length}`);

  await seller.close();
  await receiver.close();
  await s.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
