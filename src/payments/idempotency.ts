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
 *
 * Only final answers are kept: an outcome (approved, pending, blocked) or a refusal that cannot change. A transient
 * one (`retryable`: another payment of the agent in flight, a seller unreachable before paying, a dependency down, a
 * rate limit) frees the key when no payment was committed to it, so the same key runs again once the cause is gone.
 *
 * Fencing: each run of a key has a generation (`fence`, increased when another instance takes the key over), and a
 * payment commits to its key (hold: the key's `txnId`) before anything is sent. Take-over and commit are two
 * conditional updates of the same document: a take-over needs no payment committed, a commit needs the generation
 * unchanged, so exactly one of them wins whatever the timing. An instance that stalled past its lease and wakes up
 * finds its commit refused and stops before paying; a payment that did commit keeps the key from being taken over,
 * and its outcome becomes the key's answer.
 */
import { createHash } from "node:crypto";
import { conflict, badRequest, dependencyUnavailable, transient, upstreamError } from "../errors";
import type { Fence } from "../store/leases";
import type { Store } from "../store";
import type { ErrorBody } from "../schemas/common";
import type { PayAnswer, PayOutcome } from "../schemas/payments";
import type { IdempotencyDoc, PaymentDoc } from "../store/documents";
import { PaymentLedger } from "./phases";
import type { Principal } from "../principal";

const TTL_MS = 24 * 3600 * 1000;
const WAIT_MAX_MS = 120_000;
const POLL_FIRST_MS = 50;
const POLL_MAX_MS = 1_000;
/** Retry-After of a repeat that found the key still running, or its first run gone without an answer. */
const BUSY_RETRY_S = 2;

/** Whether an answer is transient: never kept under a key (see the module comment). */
export function isRetryable(answer: StoredResponse): boolean {
  return "error" in answer && answer.error.retryable === true;
}

/** The caller idempotency keys are scoped to: the API key (one key means one payment on REST and MCP alike). */
export function idempotencyCaller(p: Principal): string {
  if (p.role === "registrar") return "registrar";
  return p.keyPrefix + (p.role === "agent" ? p.agentAddress : p.ownerAddress);
}

/** What a key keeps: the payment's answer (an outcome, or an error with the headers it needs, e.g. Retry-After). */
export type StoredResponse = PayAnswer;

/** A key's stored answer; records written before answers were typed hold `{ status, body, headers }` instead. */
export function storedAnswer(stored: NonNullable<IdempotencyDoc["response"]>): PayAnswer {
  if ("outcome" in stored || "error" in stored) return stored;
  // An outcome's `status` is a word (approved, pending, blocked); an error body's is its HTTP status.
  const body = stored.body as PayOutcome | ErrorBody;
  if (typeof body.status === "string") return { outcome: body };
  return { error: body, ...(stored.headers ? { headers: stored.headers } : {}) };
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
  /** The clock leases are measured with (tests inject one to play a stalled instance). */
  clock: () => number;
  /** Whether a key's holder is judged dead by its stale heartbeat: its key is taken over at once, lease or not. */
  isDead: (holder: string | undefined) => boolean;
}

/** What a key's run is given: its scope, and the key's fence, which its payment holds before sending anything. */
export type KeyRun = (scope: string, fence: Fence) => Promise<StoredResponse>;

export class IdempotencyService {
  /** Requests running in this process, by scope: repeats wait on them directly. */
  private readonly running = new Map<string, Promise<StoredResponse>>();
  private readonly opts: IdempotencyOptions;

  constructor(
    private readonly store: Store,
    private readonly outcomeOf: OutcomeOf = () => Promise.resolve(null),
    opts: Partial<IdempotencyOptions> = {},
  ) {
    this.opts = {
      instanceId: opts.instanceId ?? "local",
      leaseMs: opts.leaseMs ?? 30_000,
      clock: opts.clock ?? Date.now,
      isDead: opts.isDead ?? (() => false),
    };
  }

  private leaseUntil(): Date {
    return new Date(this.opts.clock() + this.opts.leaseMs);
  }

  /** The fence of run `fence` of the key: a payment commits to the key by holding it (see the module comment). */
  private fenceOf(scope: string, fence: number): Fence {
    return {
      hold: async (txnId, replaces) =>
        (await this.store.idempotency.findOneAndUpdate(
          { scope, fence, state: "in_progress", $or: [{ txnId: null }, { txnId }, ...(replaces ? [{ txnId: replaces }] : [])] },
          { $set: { txnId, leaseUntil: this.leaseUntil() } },
        )) !== null,
      letGo: async (txnId) => {
        await this.store.idempotency.updateOne({ scope, fence, txnId }, { $set: { txnId: null } });
      },
    };
  }

  /** At start-up: the keys this instance id held died with its predecessor; others may take them over at once. */
  async releaseOwn(): Promise<void> {
    await this.store.idempotency.updateMany({ holder: this.opts.instanceId, state: "in_progress" }, { $set: { leaseUntil: new Date(0) } });
  }

  /** Runs `fn` once per (caller, key); replays its stored response for repeats with the same body. */
  async run(callerId: string, key: string, body: unknown, fn: KeyRun): Promise<StoredResponse & { replayed: boolean }> {
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
          fence: 1,
          txnId: null,
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
    return { ...(await this.runFirst(scope, 1, fn)), replayed: false };
  }

  private async runFirst(scope: string, fence: number, fn: KeyRun): Promise<StoredResponse> {
    const first = this.first(scope, fence, fn);
    this.running.set(scope, first);
    try {
      return await first;
    } finally {
      this.running.delete(scope);
    }
  }

  private async first(scope: string, fence: number, fn: KeyRun): Promise<StoredResponse> {
    const heartbeat = setInterval(
      () => {
        this.store.idempotency
          .updateOne({ scope, fence, state: "in_progress" }, { $set: { leaseUntil: this.leaseUntil() } })
          .catch(() => undefined);
      },
      Math.max(50, Math.floor(this.opts.leaseMs / 3)),
    );
    heartbeat.unref();
    try {
      // Every final answer is kept, failures too: after a payment was authorised, a retry must not pay again.
      const response = await fn(scope, this.fenceOf(scope, fence));
      if (isRetryable(response)) {
        // Transient, and nothing committed to the key: freed, the same key runs again (a store that fails here leaves
        // the key to expire with its lease, after which a repeat takes it over).
        const freed = await this.store.idempotency.deleteOne({ scope, fence, txnId: null }).catch(() => ({ deletedCount: 1 }));
        if (freed.deletedCount === 1) return response;
        // Taken over meanwhile: the key is another run's, and this answer only its own caller's.
        if (!(await this.store.idempotency.findOne({ scope, fence }).catch(() => null))) return response;
        // A payment committed to the key after all: this is the key's answer for good, and no longer "retry with it".
        if ("error" in response) {
          const { retryable: _transient, ...error } = response.error;
          return await this.keep(scope, fence, { ...response, error });
        }
      }
      return await this.keep(scope, fence, response);
    } catch (err) {
      // Nothing answered. Only a key whose payment never began (nothing committed to it) may be used again.
      const freed = await this.store.idempotency.deleteOne({ scope, fence, txnId: null }).catch(() => null);
      // The store does not answer: the key stays as it is (its lease runs out; a repeat then takes it over, or answers
      // with the payment committed to it).
      if (!freed) throw dependencyUnavailable("store");
      if (freed.deletedCount === 1) throw err;
      const doc = await this.store.idempotency.findOne({ scope }).catch(() => null);
      // Taken over by another instance: this run never paid (its commit was refused), and the key is the other's.
      if (doc && doc.fence !== fence) throw err;
      throw transient(
        upstreamError(
          "The payment's outcome could not be answered now; it is resolved from the chain. Retry with the same Idempotency-Key to get it (it will not pay twice), or check the ledger.",
        ),
        BUSY_RETRY_S,
      );
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Keeps this run's answer under the key: a run whose key was taken over answers its own caller, not the key. */
  private async keep(scope: string, fence: number, response: StoredResponse): Promise<StoredResponse> {
    await this.store.idempotency.updateOne({ scope, fence }, { $set: { state: "done", response } });
    return response;
  }

  /**
   * The outcome of a key's first request: from this process at once, else from the store, backing off. When the
   * instance running it stopped renewing its lease before any payment began, this request takes the key and runs.
   */
  private async awaitResult(scope: string, fn: KeyRun): Promise<StoredResponse & { replayed: boolean }> {
    const local = this.running.get(scope);
    if (local)
      return local.then(
        // A transient answer was not kept: it is shared with the caller, not replayed from the key.
        (r) => ({ ...r, replayed: !isRetryable(r) }),
        () => this.awaitResult(scope, fn),
      );
    const deadline = Date.now() + WAIT_MAX_MS;
    for (let delay = POLL_FIRST_MS; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
      const doc = await this.store.idempotency.findOne({ scope });
      if (!doc)
        throw transient(
          conflict(
            "The first request with this Idempotency-Key ended before paying anything, with nothing kept; retry it with the same key.",
          ),
          BUSY_RETRY_S,
        );
      if (doc.state === "done" && doc.response) return { ...storedAnswer(doc.response), replayed: true };
      // Its instance may be gone: a payment that recovery has finished answers with its outcome.
      const resolved = await this.resolvedOutcome(doc);
      if (resolved) return { ...resolved, replayed: true };
      const legacy = doc.fence === undefined; // written before fencing: only the payments tell whether one began
      if (
        doc.leaseUntil &&
        (doc.leaseUntil.getTime() < this.opts.clock() || this.opts.isDead(doc.holder)) &&
        !doc.txnId &&
        !(legacy && (await this.store.payments.findOne({ idempotencyScope: scope })))
      ) {
        // No payment committed to the key and its holder stopped renewing: take it (of several waiters, exactly one
        // does). The holder may be stalled, not dead: its commit then finds the generation moved on and stops.
        const taken = await this.store.idempotency.findOneAndUpdate(
          { scope, state: "in_progress", leaseUntil: doc.leaseUntil, txnId: null, fence: legacy ? { $exists: false } : doc.fence },
          { $set: { holder: this.opts.instanceId, leaseUntil: this.leaseUntil() }, $inc: { fence: 1 } },
          { returnDocument: "after" },
        );
        if (taken) {
          // A run before this one may have written its ledger entry and stopped before committing it to the key: it can
          // never commit now (the generation moved on), so the entry, which nothing was sent for, goes.
          await new PaymentLedger(this.store.payments).dropUncommitted(scope);
          return { ...(await this.runFirst(scope, (doc.fence ?? 0) + 1, fn)), replayed: false };
        }
      }
      if (Date.now() > deadline || Date.now() - doc.createdAt.getTime() > WAIT_MAX_MS) {
        throw transient(
          conflict(
            "The first request with this Idempotency-Key is still being resolved; retry later with the same key, or check the ledger.",
          ),
          BUSY_RETRY_S,
        );
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /** The key's answer from the finished payment committed to it (written to the key too), if there is one. */
  private async resolvedOutcome(key: IdempotencyDoc): Promise<StoredResponse | null> {
    const { scope, txnId } = key;
    if (key.fence !== undefined && !txnId) return null;
    const payment = await this.store.payments.findOne(txnId ? { txnId, phase: "done" } : { idempotencyScope: scope, phase: "done" });
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
        // The payment committed to the key (or a key written before fencing), not one abandoned under it.
        { scope: payment.idempotencyScope, state: "in_progress", $or: [{ txnId: payment.txnId }, { fence: { $exists: false } }] },
        { $set: { state: "done", response } },
      );
  }
}
