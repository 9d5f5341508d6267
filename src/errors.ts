/** One error type for everything a client should see; the error middleware turns it into { error, message, status }. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
    /** Transient: nothing was done or kept (not even under an Idempotency-Key); the same request may succeed later. */
    readonly retryable = false,
  ) {
    super(message);
    this.name = "AppError";
  }
}

/**
 * `err` as a transient answer: the body says `retryable: true` and `Retry-After` says when to try again. An
 * Idempotency-Key never keeps such an answer (see services/idempotency.ts).
 */
export function transient(err: AppError, retryAfterSeconds: number): AppError {
  const headers = { ...err.headers, "Retry-After": String(Math.max(1, Math.ceil(retryAfterSeconds))) };
  return new AppError(err.status, err.code, err.message, err.details, headers, true);
}

export const badRequest = (message: string, details?: unknown) => new AppError(400, "bad_request", message, details);
export const unauthorized = (message = "Missing or invalid API key.") => new AppError(401, "unauthorized", message);
export const invalidSignature = (message: string) => new AppError(401, "invalid_signature", message);
export const forbidden = (message: string) => new AppError(403, "forbidden", message);
export const notFound = (message: string) => new AppError(404, "not_found", message);
export const conflict = (message: string, details?: unknown) => new AppError(409, "conflict", message, details);
export const payloadTooLarge = (message = "Request body is too large.") => new AppError(413, "payload_too_large", message);
export const unsupportedMediaType = (message = "Send the request body as application/json.") =>
  new AppError(415, "unsupported_media_type", message);
export const unprocessable = (code: string, message: string, details?: unknown) => new AppError(422, code, message, details);
export const rateLimited = (retryAfterSeconds: number) =>
  transient(new AppError(429, "rate_limited", `Too many requests; retry after ${retryAfterSeconds} s.`), retryAfterSeconds);
export const upstreamError = (message: string, details?: unknown) => new AppError(502, "upstream_error", message, details);
/** The Retry-After of a 503 `unavailable`. */
export const UNAVAILABLE_RETRY_S = 5;
/** A dependency (the chain, the store) or this instance cannot serve the request now: 503, retryable. */
export const unavailable = (message: string, retryAfterSeconds = UNAVAILABLE_RETRY_S) =>
  transient(new AppError(503, "unavailable", message), retryAfterSeconds);
export const gatewayTimeout = (message: string) => new AppError(504, "upstream_timeout", message);

/** The interface's error shape of an AppError: `{ error, message, status }` plus `details` when there are any. */
export function errorBody(e: AppError) {
  return {
    error: e.code,
    message: e.message,
    status: e.status,
    ...(e.details !== undefined ? { details: e.details } : {}),
    ...(e.retryable ? { retryable: true as const } : {}),
  };
}

/**
 * This instance lost the lease a request ran under (it stalled past it and another instance took over) before the
 * request committed to anything: nothing was paid. Never kept as an Idempotency-Key's answer.
 */
export class LeaseLostError extends AppError {
  constructor(message = "This request lost its lock to another instance before paying anything; nothing was paid. Retry it.") {
    super(409, "conflict", message, undefined, { "Retry-After": "1" }, true);
  }
}

/** The AppError an error body stands for (an answer kept under an Idempotency-Key, given again). */
export function appErrorOf(
  body: { error: string; message: string; status: number; details?: unknown; retryable?: boolean },
  headers?: Record<string, string>,
) {
  return new AppError(body.status, body.error, body.message, body.details, headers, body.retryable === true);
}

const MONGO_DOWN = /^Mongo(Network|NetworkTimeout|ServerSelection|NotConnected|TopologyClosed|PoolCleared)Error$/;
/** ethers' codes for a node that did not answer (or answered an HTTP error), and socket failures under any client. */
const CHAIN_DOWN_CODES = new Set(["NETWORK_ERROR", "TIMEOUT", "SERVER_ERROR"]);
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * Which dependency an unexpected error says is down: the store (the MongoDB driver's network and server-selection
 * errors), the chain (ethers' network, timeout and server errors, viem's HTTP and timeout errors, a socket error), or
 * none. Seller failures never get here: the buyer turns them into their own AppErrors first.
 */
export function dependencyDown(err: unknown): "store" | "chain" | null {
  type Failure = { name?: unknown; code?: unknown; cause?: unknown; error?: unknown } | null;
  let e = err as Failure;
  // The failure itself, or what it wraps (ethers' `error`, a `cause`), a few levels down.
  for (let depth = 0; e && depth < 4; depth++) {
    if (typeof e.name === "string" && MONGO_DOWN.test(e.name)) return "store";
    if (typeof e.code === "string" && (CHAIN_DOWN_CODES.has(e.code) || SOCKET_CODES.has(e.code))) return "chain";
    if (e.name === "HttpRequestError" || e.name === "TimeoutError") return "chain";
    e = e.cause ?? e.error ?? null;
  }
  return null;
}

/** The 503 of a dependency that does not answer; retry after Retry-After. */
export function dependencyUnavailable(which: "store" | "chain"): AppError {
  const what = which === "store" ? "The database does not answer" : "The chain's JSON-RPC node does not answer";
  return unavailable(`${what}. Retry later; a payment retried with the same Idempotency-Key is never paid twice.`);
}
