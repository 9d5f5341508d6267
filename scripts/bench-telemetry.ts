/**
 * npx tsx scripts/bench-telemetry.ts: the CPU the telemetry adds to one payment, measured alone (no chain, no store),
 * with traces off and on (exported over OTLP/HTTP to a local do-nothing collector). One payment's telemetry is what
 * POST /pay does on the approved path: the HTTP server span (tracing only), the payment span, seven steps (admit,
 * quote, sign, decide, authorize, send, settle), two annotations, the outcome count, and BENCH_RPC_CALLS (14, what
 * bench:throughput counts per payment) JSON-RPC calls counted. Each step runs an empty async function; the same run
 * without telemetry is subtracted. BENCH_PAYMENTS (20000) payments per measure.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Telemetry, type PaymentStep } from "../src/telemetry";

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 20_000);
const RPC_CALLS = Number(process.env.BENCH_RPC_CALLS ?? 14);
const STEPS: PaymentStep[] = ["admit", "quote", "sign", "decide", "authorize", "send", "settle"];
const METHODS = ["eth_call", "eth_sendRawTransaction", "eth_getTransactionReceipt", "eth_getBlockByNumber"];
const probes = { indexerLag: () => Promise.resolve(0), webhookQueue: () => Promise.resolve(0) };
const work = () => Promise.resolve(1);

/** One payment without telemetry: the same awaits. */
async function bare(): Promise<void> {
  for (let i = 0; i < STEPS.length; i++) await work();
}

async function instrumented(t: Telemetry): Promise<void> {
  const run = async () => {
    for (const step of STEPS) await t.step(step, work);
    t.annotate("txn_0123456789abcdef01234567", "0x" + "ab".repeat(32));
    for (let i = 0; i < RPC_CALLS; i++) t.metrics.rpcCall(METHODS[i % METHODS.length]);
    t.counted({
      outcome: {
        status: "pending",
        approvalId: "apr_x",
        amount: "1",
        merchant: "m",
        intent: "i",
        transactionId: "t",
        expiresAt: "",
        message: "",
      },
    });
  };
  const tracing = t.tracing;
  if (!tracing) return t.payment("0xagent", "pay", run);
  // The HTTP server span, as the tracing middleware opens it around the request.
  const ctx = { get: () => "", headers: {}, method: "POST", path: "/pay", res: { statusCode: 200 } } as never;
  await tracing.middleware()(ctx, () => t.payment("0xagent", "pay", run));
}

/** CPU ms per payment; `flush` (every 200 payments) sends the spans, so that none is dropped and their export counts. */
async function cpuPerPayment(fn: () => Promise<void>, flush: () => Promise<void> = () => Promise.resolve()): Promise<number> {
  for (let i = 0; i < 2_000; i++) await fn(); // warm up
  await flush();
  const before = process.cpuUsage();
  for (let i = 0; i < PAYMENTS; i++) {
    await fn();
    if (i % 200 === 199) await flush();
  }
  await flush();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / PAYMENTS;
}

async function main(): Promise<void> {
  let spans = 0; // received, warm-up included
  const collector = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      spans += (body.match(/"spanId"/g) ?? []).length;
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`;

  const off = new Telemetry(probes);
  const on = new Telemetry(probes, { url, headers: {}, serviceName: "bench", version: "0", instanceId: "bench" });
  const base = await cpuPerPayment(bare);
  const offMs = (await cpuPerPayment(() => instrumented(off))) - base;
  const onMs =
    (await cpuPerPayment(
      () => instrumented(on),
      () => on.flush(),
    )) - base;
  console.log(`${PAYMENTS} payments per measure, ${STEPS.length} steps and ${RPC_CALLS} JSON-RPC calls each`);
  console.log(`telemetry CPU a payment: traces off ${(offMs * 1000).toFixed(1)} µs, traces on ${(onMs * 1000).toFixed(1)} µs`);
  console.log(`(spans received by the collector: ${spans}; the scrape itself: ${(await scrapeMs(off)).toFixed(2)} ms)`);
  await on.close();
  collector.close();
}

async function scrapeMs(t: Telemetry): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < 20; i++) await t.metrics.scrape();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / 20;
}

void main();
