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
