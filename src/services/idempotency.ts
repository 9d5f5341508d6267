/**
 * Idempotency-Key: the same key and body returns the first result (also while the first is still running), whatever
 * it was; the same key with another body is 409. Keys are scoped to the caller's API key and kept for 24 h.
 *
 * A repeat waits on the first request in this process at no cost, and backs off while it runs on another instance.
 * The instance running a key holds it under a lease it renews; when that instance dies before its payment began, a
 * repeat on another instance takes the key over and runs the request itself (after a restart under the same instance
 * id, at once).
 * A key whose payment may have moved money is never freed: when the first request ends in an unexpected error after
 * its payment began, the key stays taken, and the payment's outcome (resolved from the chain by recovery) becomes
 * the key's answer.
 */
import { createHash } from "node:crypto";
import { AppError, conflict, badRequest } from "../errors";
import type { Store } from "../store";
import type { PaymentDoc } from "../store/documents";
import type { Principal } from "./keys";

const TTL_MS = 24 * 3600 * 1000;
const WAIT_MAX_MS = 120_000;
const POLL_FIRST_MS = 50;
const POLL_MAX_MS = 1_000;

/** The caller idempotency keys are scoped to: the API key (one key means one payment on REST and MCP alike). */
export function idempotencyCaller(p: Principal): string {
  if (p.role === "registrar") return "registrar";
  return p.keyPrefix + (p.role === "agent" ? p.agentAddress : p.ownerAddress);
}

export interface StoredResponse {
  status: number;
  body: unknown;
  /** Headers the answer needs (Retry-After of a 429). */
  headers?: Record<string, string>;
}

function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Where a key's record lives: the caller and the key, hashed. */
export function idempotencyScope(callerId: string, key: string): string {
  return createHash("sha256").update(`${callerId}\n${key}`).digest("hex");
}

/** The fingerprint of a request body: the same key with another body is refused. */
export function requestHashOf(body: unknown): string {
  return createHash("sha256").update(stable(body)).digest("hex");
}

/** The answer a finished payment gives under its key when its own request could not give it (crash, error). */
export type OutcomeOf = (payment: PaymentDoc) => Promise<StoredResponse | null>;

export interface IdempotencyOptions {
  /** This instance's id: the holder of the keys it runs. */
  instanceId: string;
  /** How long a key's holder keeps it without renewing. */
  leaseMs: number;
}

export class IdempotencyService {
  /** Requests running in this process, by scope: repeats wait on them directly. */
  private readonly running = new Map<string, Promise<StoredResponse>>();
  private readonly opts: IdempotencyOptions;

  constructor(
    private readonly store: Store,
    private readonly outcomeOf: OutcomeOf = () => Promise.resolve(null),
    opts: Partial<IdempotencyOptions> = {},
  ) {
    this.opts = { instanceId: opts.instanceId ?? "local", leaseMs: opts.leaseMs ?? 30_000 };
  }

  private leaseUntil(): Date {
    return new Date(Date.now() + this.opts.leaseMs);
  }

  /** At start-up: the keys this instance id held died with its predecessor; others may take them over at once. */
  async releaseOwn(): Promise<void> {
    await this.store.idempotency.updateMany({ holder: this.opts.instanceId, state: "in_progress" }, { $set: { leaseUntil: new Date(0) } });
  }

  /** Runs `fn` once per (caller, key); replays its stored response for repeats with the same body. */
  async run(
    callerId: string,
    key: string,
    body: unknown,
    fn: (scope: string) => Promise<StoredResponse>,
  ): Promise<StoredResponse & { replayed: boolean }> {
    if (!/^[\x21-\x7e]{1,200}$/.test(key)) throw badRequest("Idempotency-Key must be 1-200 printable ASCII characters.");
    const scope = idempotencyScope(callerId, key);
    const requestHash = requestHashOf(body);
    const now = new Date();
    const before = await this.store.idempotency.findOneAndUpdate(
      { scope },
      {
        $setOnInsert: {
          scope,
          requestHash,
          state: "in_progress",
          response: null,
          holder: this.opts.instanceId,
          leaseUntil: this.leaseUntil(),
          createdAt: now,
          expiresAt: new Date(now.getTime() + TTL_MS),
        },
      },
      { upsert: true, returnDocument: "before" },
    );
    if (before) {
      if (before.requestHash !== requestHash) {
        throw conflict("This Idempotency-Key was already used with a different request body.");
      }
      return this.awaitResult(scope, fn);
    }
    return { ...(await this.runFirst(scope, fn)), replayed: false };
  }

  private async runFirst(scope: string, fn: (scope: string) => Promise<StoredResponse>): Promise<StoredResponse> {
    const first = this.first(scope, fn);
    this.running.set(scope, first);
    try {
      return await first;
    } finally {
      this.running.delete(scope);
    }
  }

  private async first(scope: string, fn: (scope: string) => Promise<StoredResponse>): Promise<StoredResponse> {
    const holder = this.opts.instanceId;
    const heartbeat = setInterval(
      () => {
        this.store.idempotency
          .updateOne({ scope, holder, state: "in_progress" }, { $set: { leaseUntil: this.leaseUntil() } })
          .catch(() => undefined);
      },
      Math.max(50, Math.floor(this.opts.leaseMs / 3)),
    );
    heartbeat.unref();
    try {
      // Every answer is kept, failures too: after a payment was authorised, a retry must not pay again.
      const response = await fn(scope);
      await this.store.idempotency.updateOne({ scope }, { $set: { state: "done", response } });
      return response;
    } catch (err) {
      // Nothing answered. Only a key whose payment never began may be used again.
      if (!(await this.store.payments.findOne({ idempotencyScope: scope }).catch(() => ({})))) {
        await this.store.idempotency.deleteOne({ scope });
        throw err;
      }
      throw new AppError(
        502,
        "upstream_error",
        "The payment's outcome could not be answered now; it is resolved from the chain. Retry with the same Idempotency-Key to get it (it will not pay twice), or check the ledger.",
      );
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * The outcome of a key's first request: from this process at once, else from the store, backing off. When the
   * instance running it stopped renewing its lease before any payment began, this request takes the key and runs.
   */
  private async awaitResult(
    scope: string,
    fn: (scope: string) => Promise<StoredResponse>,
  ): Promise<StoredResponse & { replayed: boolean }> {
    const local = this.running.get(scope);
    if (local)
      return local.then(
        (r) => ({ ...r, replayed: true }),
        () => this.awaitResult(scope, fn),
      );
    const deadline = Date.now() + WAIT_MAX_MS;
    for (let delay = POLL_FIRST_MS; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
      const doc = await this.store.idempotency.findOne({ scope });
      if (!doc) throw conflict("The first request with this Idempotency-Key failed before paying anything; retry it.");
      if (doc.state === "done" && doc.response) return { ...doc.response, replayed: true };
      // Its instance may be gone: a payment that recovery has finished answers with its outcome.
      const resolved = await this.resolvedOutcome(scope);
      if (resolved) return { ...resolved, replayed: true };
      if (doc.leaseUntil && doc.leaseUntil.getTime() < Date.now() && !(await this.store.payments.findOne({ idempotencyScope: scope }))) {
        // Nothing was paid under the key and its holder is gone: take it (of several waiters, exactly one does).
        const taken = await this.store.idempotency.findOneAndUpdate(
          { scope, state: "in_progress", leaseUntil: doc.leaseUntil },
          { $set: { holder: this.opts.instanceId, leaseUntil: this.leaseUntil() } },
        );
        if (taken) return { ...(await this.runFirst(scope, fn)), replayed: false };
      }
      if (Date.now() > deadline || Date.now() - doc.createdAt.getTime() > WAIT_MAX_MS) {
        throw conflict(
          "The first request with this Idempotency-Key is still being resolved; retry later with the same key, or check the ledger.",
        );
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /** The key's answer from its finished payment (written to the key too), if there is one. */
  private async resolvedOutcome(scope: string): Promise<StoredResponse | null> {
    const payment = await this.store.payments.findOne({ idempotencyScope: scope, phase: "done" });
    if (!payment) return null;
    const response = await this.outcomeOf(payment);
    if (!response) return null;
    await this.store.idempotency.updateOne({ scope, state: "in_progress" }, { $set: { state: "done", response } });
    return response;
  }

  /** Recovery finished a payment: its key, if it still waits, answers with the outcome from now on. */
  async settleFromPayment(payment: PaymentDoc): Promise<void> {
    if (!payment.idempotencyScope) return;
    const response = await this.outcomeOf(payment);
    if (response)
      await this.store.idempotency.updateOne(
        { scope: payment.idempotencyScope, state: "in_progress" },
        { $set: { state: "done", response } },
      );
  }
}
