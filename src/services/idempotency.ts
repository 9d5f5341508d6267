/**
 * Idempotency-Key: the same key and body returns the first result (also while the first is still running), whatever
 * it was; the same key with another body is 409. Keys are scoped to the caller's API key and kept for 24 h.
 */
import { createHash } from "node:crypto";
import { conflict, badRequest } from "../errors";
import type { Store } from "../store";
import type { Principal } from "./keys";

const TTL_MS = 24 * 3600 * 1000;
const WAIT_STEP_MS = 25;
const WAIT_MAX_MS = 120_000;

/** The caller idempotency keys are scoped to: the API key (one key means one payment on REST and MCP alike). */
export function idempotencyCaller(p: Principal): string {
  if (p.role === "registrar") return "registrar";
  return p.keyPrefix + (p.role === "agent" ? p.agentAddress : p.ownerAddress);
}

export interface StoredResponse {
  status: number;
  body: unknown;
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

export class IdempotencyService {
  constructor(private readonly store: Store) {}

  /** Runs `fn` once per (caller, key); replays its stored response for repeats with the same body. */
  async run(
    callerId: string,
    key: string,
    body: unknown,
    fn: () => Promise<StoredResponse>,
  ): Promise<StoredResponse & { replayed: boolean }> {
    if (!/^[\x21-\x7e]{1,200}$/.test(key)) throw badRequest("Idempotency-Key must be 1-200 printable ASCII characters.");
    const scope = createHash("sha256").update(`${callerId}\n${key}`).digest("hex");
    const requestHash = createHash("sha256").update(stable(body)).digest("hex");
    const now = new Date();
    const before = await this.store.idempotency.findOneAndUpdate(
      { scope },
      { $setOnInsert: { scope, requestHash, state: "in_progress", response: null, createdAt: now, expiresAt: new Date(now.getTime() + TTL_MS) } },
      { upsert: true, returnDocument: "before" },
    );
    if (before) {
      if (before.requestHash !== requestHash) {
        throw conflict("This Idempotency-Key was already used with a different request body.");
      }
      return { ...(await this.awaitResult(scope)), replayed: true };
    }
    try {
      // Every answer is kept, failures too: after a payment was authorised, a retry must not pay again. Only an
      // exception (nothing answered) frees the key.
      const response = await fn();
      await this.store.idempotency.updateOne({ scope }, { $set: { state: "done", response } });
      return { ...response, replayed: false };
    } catch (err) {
      await this.store.idempotency.deleteOne({ scope });
      throw err;
    }
  }

  private async awaitResult(scope: string): Promise<StoredResponse> {
    const deadline = Date.now() + WAIT_MAX_MS;
    for (;;) {
      const doc = await this.store.idempotency.findOne({ scope });
      if (!doc) throw conflict("The first request with this Idempotency-Key failed; retry it.");
      if (doc.state === "done" && doc.response) return doc.response;
      if (Date.now() - doc.createdAt.getTime() > WAIT_MAX_MS) {
        // Its process stopped before answering; the payment itself is finished by recovery and shows in the ledger.
        throw conflict("The first request with this Idempotency-Key was interrupted before it answered; check the ledger for its outcome.");
      }
      if (Date.now() > deadline) throw conflict("The first request with this Idempotency-Key is still running.");
      await new Promise((r) => setTimeout(r, WAIT_STEP_MS));
    }
  }
}
