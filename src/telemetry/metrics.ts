/**
 * Prometheus metrics of one service instance (prom-client), served by GET /metrics. Every instance has its own
 * Registry: tests run several stacks in one process, and prom-client's global registry would mix them up (and refuse
 * the second registration of each name). Labelled children are looked up once per label value and kept, so the
 * payment path allocates no label object per observation.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** The steps of a payment, named as the payment pipeline names them (admit ... settle; release and recover). */
export type PaymentStep = "admit" | "quote" | "decide" | "authorize" | "swap" | "sign" | "send" | "settle" | "release" | "recover";

/** What a payment came to: its answer, or an owner's decision on it. */
export type PaymentOutcome = "approved" | "blocked" | "pending" | "denied" | "expired" | "failed";

/** Which limit refused a request with 429 rate_limited. */
export type RateLimit = "requests" | "auth_failures";

/** Read on each scrape (they cost a store or chain round trip, nothing on the payment path). */
export interface MetricProbes {
  /** Blocks the indexer has still to read; null when the store or the chain does not answer. */
  indexerLag(): Promise<number | null>;
  /** Webhook deliveries waiting to be sent (pending, due or backing off). */
  webhookQueue(): Promise<number>;
}

interface Observer {
  observe(value: number): void;
}
interface Incrementer {
  inc(value?: number): void;
}

/** Seconds: a cached read takes a millisecond, a receipt on Base a couple of seconds, a slow seller up to its time limit. */
const STEP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A probe that does not answer within PROBE_MS fails: a scrape is never held up by a store or a chain that hangs. */
const PROBE_MS = 3_000;

function inTime<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("no answer in time")), PROBE_MS)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export class Metrics {
  readonly registry = new Registry();
  private readonly payments: Counter<"outcome" | "reason">;
  private readonly steps: Histogram<"step">;
  private readonly rpcCalls: Counter<"method">;
  private readonly rpcErrors: Counter<"method" | "kind">;
  private readonly webhookAttempts: Counter<"result">;
  private readonly rateLimited: Counter<"limit">;
  private readonly stepChildren = new Map<string, Observer>();
  private readonly rpcChildren = new Map<string, Incrementer>();
  private readonly outcomeChildren = new Map<string, Incrementer>();

  constructor(probes: MetricProbes) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.payments = new Counter({
      name: "spendgate_payments_total",
      help: "Payments by outcome (approved, blocked, pending, denied, expired, failed) and reason (the refusal reason or error code; none)",
      labelNames: ["outcome", "reason"],
      registers,
    });
    this.steps = new Histogram({
      name: "spendgate_payment_step_duration_seconds",
      help: "Time of each payment step (admit, quote, decide, sign, authorize, swap, send, settle, release, recover)",
      labelNames: ["step"],
      buckets: STEP_BUCKETS,
      registers,
    });
    this.rpcCalls = new Counter({
      name: "spendgate_rpc_requests_total",
      help: "JSON-RPC calls to the chain node by method",
      labelNames: ["method"],
      registers,
    });
    this.rpcErrors = new Counter({
      name: "spendgate_rpc_errors_total",
      help: "JSON-RPC calls that failed, by method and kind: node (the node answered an error, reverts included) or transport (no usable answer)",
      labelNames: ["method", "kind"],
      registers,
    });
    this.webhookAttempts = new Counter({
      name: "spendgate_webhook_attempts_total",
      help: "Webhook delivery attempts by result: delivered, retry (failed, tried again later), failed (failed for good)",
      labelNames: ["result"],
      registers,
    });
    this.rateLimited = new Counter({
      name: "spendgate_rate_limited_total",
      help: "Requests refused with 429 rate_limited, by limit: requests (RATE_LIMIT_PER_MINUTE) or auth_failures (AUTH_FAILURES_PER_MINUTE)",
      labelNames: ["limit"],
      registers,
    });
    new Gauge({
      name: "spendgate_indexer_lag_blocks",
      help: "Blocks the indexer has still to read (chain head + 1 - its cursor); absent when the store or the chain does not answer",
      registers,
      async collect() {
        const lag = await inTime(probes.indexerLag()).catch(() => null);
        if (lag === null) this.reset();
        else this.set(lag);
      },
    });
    new Gauge({
      name: "spendgate_webhook_queue_depth",
      help: "Webhook deliveries waiting to be sent (due now or backing off)",
      registers,
      async collect() {
        const depth = await inTime(probes.webhookQueue()).catch(() => null);
        if (depth === null) this.reset();
        else this.set(depth);
      },
    });
    // Every series a dashboard or an alert names exists from the start (at 0), not only after its first event.
    for (const limit of ["requests", "auth_failures"] as const) this.rateLimited.labels(limit).inc(0);
    for (const result of ["delivered", "retry", "failed"] as const) this.webhookAttempts.labels(result).inc(0);
  }

  /** The histogram child of a step, made once. */
  step(step: PaymentStep): Observer {
    let child = this.stepChildren.get(step);
    if (!child) this.stepChildren.set(step, (child = this.steps.labels(step)));
    return child;
  }

  /** One payment's outcome. `reason`: the refusal reason or error code; "none" for an approved or pending payment. */
  outcome(outcome: PaymentOutcome, reason = "none"): void {
    const key = `${outcome} ${reason}`;
    let child = this.outcomeChildren.get(key);
    if (!child) {
      // Reasons come from the reason table and the error catalogue; the bound only guards against a surprise.
      if (this.outcomeChildren.size >= 500) return;
      this.outcomeChildren.set(key, (child = this.payments.labels(outcome, reason)));
    }
    child.inc();
  }

  /** A JSON-RPC call (RawRpc's observer). */
  rpcCall(method: string): void {
    let child = this.rpcChildren.get(method);
    if (!child) {
      // A node's method names are a fixed set; the bound keeps a surprise from growing the registry.
      if (this.rpcChildren.size >= 200) return;
      this.rpcChildren.set(method, (child = this.rpcCalls.labels(method)));
    }
    child.inc();
  }

  rpcError(method: string, kind: "node" | "transport"): void {
    if (this.rpcChildren.has(method)) this.rpcErrors.labels(method, kind).inc();
  }

  webhookAttempt(result: "delivered" | "retry" | "failed"): void {
    this.webhookAttempts.labels(result).inc();
  }

  rateLimit(limit: RateLimit): void {
    this.rateLimited.labels(limit).inc();
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
