/**
 * Telemetry of one service instance: Prometheus metrics (always; GET /metrics) and OpenTelemetry traces (when an
 * OTLP endpoint is configured). The payment code sees four calls:
 *   payment(agent, fn)          one payment: its trace's span (POST /pay, MCP pay, an approval carried out)
 *   step(name, fn)              one step of it: timed into the step histogram, and a span when tracing
 *   annotate(txnId, paymentId)  the payment's ids once known (on its span and its steps')
 *   outcome(outcome, reason)    what it came to (the payments counter)
 * With tracing off a step costs two clock reads and one histogram observation.
 */
import { AppError } from "../errors";
import type { PayAnswer } from "../schemas/payments";
import { type MetricProbes, Metrics, type PaymentOutcome, type PaymentStep } from "./metrics";
import { ATTR, Tracing, type TracingOptions } from "./tracing";

export type { MetricProbes, PaymentOutcome, PaymentStep } from "./metrics";

/** The longest a shutdown waits for the last spans to be sent. */
const CLOSE_MS = 2_000;

export class Telemetry {
  readonly metrics: Metrics;
  /** Null unless an OTLP endpoint is configured. */
  readonly tracing: Tracing | null;

  constructor(probes: MetricProbes, tracing?: TracingOptions) {
    this.metrics = new Metrics(probes);
    this.tracing = tracing ? new Tracing(tracing) : null;
  }

  /** Runs one payment of `agent` (its trace's payment span when tracing). */
  payment<T>(agent: string, kind: "pay" | "approval", fn: () => Promise<T>): Promise<T> {
    return this.tracing ? this.tracing.payment({ [ATTR.agent]: agent, [ATTR.kind]: kind }, fn) : fn();
  }

  /**
   * Runs one step of a payment: its time goes into spendgate_payment_step_duration_seconds{step}, and its span.
   * (A bound property: call sites may take it off the object.)
   */
  readonly step = async <T>(name: PaymentStep, fn: () => Promise<T>, txnId?: string): Promise<T> => {
    const child = this.metrics.step(name);
    const started = performance.now();
    try {
      return await (this.tracing ? this.tracing.step(name, fn, txnId ? { [ATTR.txnId]: txnId } : undefined) : fn());
    } finally {
      child.observe((performance.now() - started) / 1000);
    }
  };

  /** The current payment's ids, once known. */
  annotate(txnId: string, paymentId?: string | null): void {
    this.tracing?.annotate(paymentId ? { [ATTR.txnId]: txnId, [ATTR.paymentId]: paymentId } : { [ATTR.txnId]: txnId });
  }

  /** Counts a payment's outcome (and marks its span with it). */
  outcome(outcome: PaymentOutcome, reason?: string): void {
    this.metrics.outcome(outcome, reason);
    this.tracing?.annotate(reason ? { [ATTR.outcome]: outcome, [ATTR.reason]: reason } : { [ATTR.outcome]: outcome });
  }

  /** Counts what POST /pay or MCP pay answered (its outcome, or `failed` with the error's code) and passes it on. */
  readonly counted = <A extends PayAnswer>(answer: A): A => {
    if ("outcome" in answer) {
      const o = answer.outcome;
      this.outcome(o.status, o.status === "blocked" ? o.reason : undefined);
    } else this.outcome("failed", answer.error.error);
    return answer;
  };

  /**
   * Runs and counts an approved payment carried out: approved, blocked (an AppError `blocked` whose details are the
   * refusal) or failed (the error's code).
   */
  async approval<T>(run: () => Promise<T>): Promise<T> {
    try {
      const done = await run();
      this.outcome("approved");
      return done;
    } catch (err) {
      const reason = (err instanceof AppError && (err.details as { reason?: unknown } | undefined)?.reason) || undefined;
      if (err instanceof AppError && err.code === "blocked") this.outcome("blocked", typeof reason === "string" ? reason : "blocked");
      else this.outcome("failed", err instanceof AppError ? err.code : "internal");
      throw err;
    }
  }

  /** Sends the spans ended so far (tests; shutdown). */
  async flush(): Promise<void> {
    await this.tracing?.flush();
  }

  /** Sends the spans left and stops; a collector that does not answer holds a shutdown up for CLOSE_MS at most. */
  async close(): Promise<void> {
    if (!this.tracing) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_MS)));
    await Promise.race([this.tracing.shutdown().catch(() => undefined), late]);
    clearTimeout(timer);
  }
}
