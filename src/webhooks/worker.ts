/**
 * The delivery worker: claims due deliveries atomically (findOneAndUpdate moves `nextAttemptAt` to the end of a
 * lease and sets a claim token), so two instances never send the same attempt at once and an attempt cut short by a
 * crash is due again when its lease ends. Failed attempts are retried with exponential backoff and jitter until
 * 24 h after the event, then the delivery is `failed`. Pending deliveries survive restarts: they are in the store.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { WebhookDeliveryDoc, WebhookEndpointDoc } from "./documents";
import type { WebhookUrlRules } from "./endpoints";
import type { WebhookOutbox } from "./outbox";
import { open, signatureHeader } from "./secrets";
import { type AttemptResult, postWebhook } from "./send";

/** The longest wait between two attempts. */
const MAX_BACKOFF_MS = 3_600_000;
/** Attempts kept in a delivery's log. */
const LOG_LENGTH = 50;
/** One owner's attempts in flight at once here (half the default slots): a receiver that hangs holds up no other owner's alerts. */
const PER_OWNER = 4;

export interface WorkerOptions extends WebhookUrlRules {
  timeoutMs: number;
  backoffBaseMs: number;
  pollMs: number;
  /** Deliveries sent at the same time by this worker. Default 8. */
  concurrency?: number;
  /** The clock (tests move it instead of waiting). */
  now?: () => Date;
  /** Told of each attempt's result (the service's metrics): delivered, retry (failed, due again later) or failed for good. */
  onAttempt?: (result: "delivered" | "retry" | "failed") => void;
}

/** The wait after the n-th failed attempt: base·2^(n-1), at most an hour, with ±20% jitter (receivers coming back are not stampeded). */
export function backoffMs(base: number, attempt: number, random = Math.random): number {
  const exp = Math.min(MAX_BACKOFF_MS, base * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.round(exp * (0.8 + 0.4 * random()));
}

export class WebhookWorker {
  /** Attempts this worker made (sent, refused or failed). */
  attempted = 0;
  private running = false;
  private inFlight = new Set<Promise<void>>();
  private ownersInFlight = new Map<string, number>();
  private pumping = false;
  private again = false;
  private poll: NodeJS.Timeout | undefined;
  private timers = new Set<NodeJS.Timeout>();
  private unsubscribe: (() => void) | undefined;
  private readonly now: () => Date;
  private readonly concurrency: number;
  /** The lease of a claimed attempt: the request's time limit and a wide margin. */
  private readonly leaseMs: number;

  constructor(
    private readonly outbox: WebhookOutbox,
    private readonly secretKey: Buffer,
    private readonly opts: WorkerOptions,
    private readonly logger: Logger,
  ) {
    this.now = opts.now ?? (() => new Date());
    this.concurrency = opts.concurrency ?? 8;
    this.leaseMs = opts.timeoutMs * 2 + 30_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.outbox.onEnqueue(() => this.wake());
    const tick = () => {
      this.wake();
      this.poll = setTimeout(tick, this.opts.pollMs);
      this.poll.unref();
    };
    tick();
  }

  /** Stops claiming and waits for the attempts in progress to be recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    if (this.poll) clearTimeout(this.poll);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...this.inFlight]);
  }

  /** Claims and sends whatever is due now (also used directly by tests and by start()). */
  wake(): void {
    if (this.running) void this.pump();
  }

  /** Sends every delivery due now and waits for them (for a worker that is not started: tests, scripts). */
  async drain(): Promise<number> {
    let sent = 0;
    for (let d = await this.claim(); d; d = await this.claim()) {
      await this.attempt(d);
      sent++;
    }
    return sent;
  }

  private async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        while (this.running && this.inFlight.size < this.concurrency) {
          const full = [...this.ownersInFlight].flatMap(([owner, n]) => (n >= PER_OWNER ? [owner] : []));
          const d = await this.claim(full);
          if (!d) break;
          this.ownersInFlight.set(d.ownerAddress, (this.ownersInFlight.get(d.ownerAddress) ?? 0) + 1);
          const p: Promise<void> = this.attempt(d)
            .catch((err: unknown) => this.logger.error({ err, delivery: d.deliveryId }, "webhook attempt failed unexpectedly"))
            .finally(() => {
              const n = (this.ownersInFlight.get(d.ownerAddress) ?? 1) - 1;
              if (n > 0) this.ownersInFlight.set(d.ownerAddress, n);
              else this.ownersInFlight.delete(d.ownerAddress);
              this.inFlight.delete(p);
              this.wake();
            });
          this.inFlight.add(p);
        }
      } while (this.again && this.running);
    } catch (err) {
      this.logger.error({ err }, "webhook worker could not claim deliveries; retrying at the next poll");
    } finally {
      this.pumping = false;
    }
  }

  /** Atomically takes the oldest due delivery (of an owner not in `skip`): its lease starts and the attempt is counted. */
  private async claim(skip: string[] = []): Promise<WebhookDeliveryDoc | null> {
    const now = this.now();
    return this.outbox.c.deliveries.findOneAndUpdate(
      { status: "pending", nextAttemptAt: { $lte: now }, ...(skip.length ? { ownerAddress: { $nin: skip } } : {}) },
      { $set: { nextAttemptAt: new Date(now.getTime() + this.leaseMs), claim: randomBytes(12).toString("hex") }, $inc: { attempts: 1 } },
      { sort: { nextAttemptAt: 1 }, returnDocument: "after" },
    );
  }

  private async attempt(d: WebhookDeliveryDoc): Promise<void> {
    this.attempted++;
    const startedAt = this.now();
    const endpoint = await this.outbox.c.endpoints.findOne({ endpointId: d.endpointId });
    if (!endpoint || endpoint.status !== "active") {
      await this.outbox.c.deliveries.updateOne(
        { deliveryId: d.deliveryId, claim: d.claim, status: "pending" },
        { $set: { status: "cancelled", claim: null, lastError: "endpoint_disabled" } },
      );
      return;
    }
    const result = await this.send(d, endpoint, startedAt);
    const at = this.now();
    const entry = { attempt: d.attempts, at: startedAt, httpStatus: result.httpStatus, error: result.error, latencyMs: result.latencyMs };
    const wait = backoffMs(this.opts.backoffBaseMs, d.attempts);
    const next = new Date(at.getTime() + wait);
    const status = result.ok ? "delivered" : next.getTime() > d.expiresAt.getTime() ? "failed" : "pending";
    const updated = await this.outbox.c.deliveries.updateOne(
      // Only the holder of this claim records it, and a delivery cancelled meanwhile stays cancelled.
      { deliveryId: d.deliveryId, claim: d.claim, status: "pending" },
      {
        $set: {
          status,
          claim: null,
          nextAttemptAt: status === "pending" ? next : at,
          deliveredAt: result.ok ? at : null,
          lastHttpStatus: result.httpStatus,
          lastError: result.error,
          lastLatencyMs: result.latencyMs,
        },
        $push: { log: { $each: [entry], $slice: -LOG_LENGTH } },
      },
    );
    const fields = {
      delivery: d.deliveryId,
      endpoint: d.endpointId,
      event: d.eventId,
      type: d.type,
      attempt: d.attempts,
      httpStatus: result.httpStatus,
      latencyMs: result.latencyMs,
    };
    if (updated.modifiedCount === 1) this.opts.onAttempt?.(status === "pending" ? "retry" : status);
    if (result.ok) this.logger.info(fields, "webhook delivered");
    else if (result.refused) this.logger.warn({ ...fields, error: result.error, status }, "webhook delivery refused before connecting");
    else this.logger.warn({ ...fields, error: result.error, status }, "webhook attempt failed");
    if (status === "pending" && updated.modifiedCount === 1 && this.running) this.wakeAt(wait);
  }

  /** Signs and posts the delivery, unless it is past its 24 hours or its secret cannot be read. */
  private async send(d: WebhookDeliveryDoc, endpoint: WebhookEndpointDoc, startedAt: Date): Promise<AttemptResult> {
    const refused = (error: string): AttemptResult => ({ ok: false, httpStatus: null, error, latencyMs: null, refused: true });
    if (startedAt.getTime() > d.expiresAt.getTime()) return refused("expired: not delivered within 24 hours");
    let secret: string;
    try {
      secret = open(this.secretKey, endpoint.endpointId, endpoint.secret);
    } catch {
      // Sealed under another WALLET_ENCRYPTION_KEY: nothing can be signed, so nothing is sent.
      return refused("secret_unreadable: the signing secret does not decrypt under this WALLET_ENCRYPTION_KEY");
    }
    const headers = {
      "SpendGate-Signature": signatureHeader(secret, d.payload, Math.floor(startedAt.getTime() / 1000)),
      "SpendGate-Event-Id": d.eventId,
      "SpendGate-Event-Type": d.type,
    };
    return postWebhook(endpoint.url, d.payload, headers, this.opts);
  }

  /** A retry due before the next poll is not left waiting for it. */
  private wakeAt(ms: number): void {
    if (ms >= this.opts.pollMs) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.wake();
    }, ms + 5);
    t.unref();
    this.timers.add(t);
  }
}
