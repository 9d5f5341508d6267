/**
 * The error catalogue and AppError, the one error type for everything a client should see; the error middleware turns
 * it into { error, message, status }. Every code the service answers with is in ERROR_CATALOGUE with its HTTP status,
 * the message used when the thrower gives none, and its meaning (the API reference's table, src/docs/errors.ts, is
 * generated from it). An AppError is made only here: `appError(code, message?, options?)` or a named constructor.
 */
import type { z } from "zod";

/** One code of the catalogue: its HTTP status, its default message and what it means (the API reference's words). */
export interface ErrorSpec {
  status: number;
  message: string;
  meaning: string;
}

export const ERROR_CATALOGUE = {
  bad_request: {
    status: 400,
    message: "Bad request.",
    meaning: "A field, query parameter or header is invalid; `details` lists each problem as `{ path, message }`.",
  },
  unauthorized: {
    status: 401,
    message: "Missing or invalid API key.",
    meaning: "No API key where one is needed, or an unknown, revoked or expired key.",
  },
  invalid_signature: {
    status: 401,
    message: "The owner signature does not verify.",
    meaning: "An owner signature does not verify, was already used, or its timestamp is outside ±300 s.",
  },
  forbidden: {
    status: 403,
    message: "This key may not make this call.",
    meaning:
      "The key may not act for this agent (another agent's, or not linked to this owner) or may not make this call (agents cannot approve, deny or create agents).",
  },
  not_found: {
    status: 404,
    message: "Not found.",
    meaning: "No such route, agent, approval or transaction (another caller's resources answer the same).",
  },
  method_not_allowed: {
    status: 405,
    message: "This method is not allowed here.",
    meaning: "The path exists but not with this method; the `Allow` header lists the methods.",
  },
  conflict: {
    status: 409,
    message: "The request conflicts with the current state.",
    meaning:
      "Already registered, already linked, already resolved, an Idempotency-Key reused with another body, or a stale signed timestamp; with `retryable: true`, another payment of the agent is still in flight (nothing was paid, retry after `Retry-After`).",
  },
  price_changed: {
    status: 409,
    message: "The seller's price rose above the approved amount; the approval stays pending.",
    meaning: "Approve: the seller's price rose above the approved amount; the approval stays pending.",
  },
  payee_changed: {
    status: 409,
    message: "The seller now asks to be paid at another address than the owner approved; the approval stays pending.",
    meaning:
      "Approve: the seller now asks to be paid at another address than the owner signed (ApprovalDecision.payTo); the approval stays pending.",
  },
  payload_too_large: {
    status: 413,
    message: "Request body is too large.",
    meaning: "The request body is too large (64 KiB for REST, 256 KiB for an MCP message).",
  },
  unsupported_media_type: {
    status: 415,
    message: "Send the request body as application/json.",
    meaning: "A request body that is not `application/json`.",
  },
  no_policy: {
    status: 422,
    message: "The agent has no spend policy yet.",
    meaning: "POST /pay for an agent whose owner has not set a spend policy yet.",
  },
  payment_not_required: {
    status: 422,
    message: "The seller answered without asking for payment; nothing was paid.",
    meaning: "The seller answered 2xx without asking for payment; nothing was paid.",
  },
  unsupported_payment: {
    status: 422,
    message: "The seller no longer offers an exact USDC payment on this chain.",
    meaning: "Approve: the seller no longer offers an exact USDC payment on this chain.",
  },
  unsafe_seller_address: {
    status: 422,
    message: "The seller's host resolves to a private address; refused.",
    meaning: "The seller's host resolves to a private, loopback or link-local address (refused unless ALLOW_PRIVATE_SELLERS).",
  },
  insufficient_funds: {
    status: 422,
    message: "The wallet holds less of this token than asked.",
    meaning: "Withdraw: the agent wallet holds less of the token than asked.",
  },
  withdraw_failed: {
    status: 422,
    message: "The transfer was refused on-chain; nothing moved.",
    meaning:
      "Withdraw: the recipient or the token refused the transfer (a contract that does not accept ETH, a balance another withdrawal or a payment took meanwhile); nothing moved.",
  },
  insecure_webhook_url: {
    status: 422,
    message: "The webhook URL is plain http; only https receivers are allowed here.",
    meaning: "A webhook URL that is plain http where only https receivers are allowed (ALLOW_HTTP_SELLERS, the seller rule).",
  },
  unsafe_webhook_url: {
    status: 422,
    message: "The webhook host resolves to a private address; refused.",
    meaning:
      "A webhook host that resolves to a private, loopback or link-local address, or does not resolve (refused unless ALLOW_PRIVATE_SELLERS).",
  },
  insecure_seller: {
    status: 422,
    message: "The seller is plain http; refused.",
    meaning:
      "The seller is plain http (refused unless ALLOW_HTTP_SELLERS, the embedded default): its payment header would travel in clear.",
  },
  blocked: {
    status: 422,
    message: "The approved payment was blocked on-chain.",
    meaning: "Approve: the approved payment was blocked on-chain (the body's `details` is the blocked payment result).",
  },
  gas_allowance_exceeded: {
    status: 429,
    message: "The operator gas allowance of this owner's agents for today is spent.",
    meaning:
      "The operator gas this owner's agents may cost per UTC day (OWNER_GAS_ALLOWANCE_GWEI) is spent; see GET /owner/gas and `Retry-After`. Pauses, withdrawals and hand-overs are never refused.",
  },
  headers_too_large: {
    status: 431,
    message: "Request headers are too large.",
    meaning: "The request's headers are larger than the server reads (Node's limit); the connection is closed.",
  },
  too_many_pending_approvals: {
    status: 429,
    message: "Too many payments of this agent already wait for its owner; nothing was paid or recorded.",
    meaning:
      "POST /pay: the agent already has 20 payments waiting for its owner; nothing was paid or recorded. Wait for decisions or expiry.",
  },
  rate_limited: {
    status: 429,
    message: "Too many requests.",
    meaning: "Too many requests for this key (or address) this minute; see `Retry-After`.",
  },
  internal: {
    status: 500,
    message: "Something went wrong on our side; nothing was charged. Try again later.",
    meaning: "An unexpected error on the service's side; nothing was charged.",
  },
  upstream_error: {
    status: 502,
    message: "The seller or the facilitator failed.",
    meaning:
      "The seller or the facilitator failed (unreachable, not a 402, verify or settle refused); the budget was released. With `retryable: true` the seller was out of reach before anything was signed or sent: retry, with the same Idempotency-Key, after `Retry-After`.",
  },
  invalid_payment_required: {
    status: 502,
    message: "The seller's 402 carries no readable x402 payment requirement.",
    meaning: "The seller's 402 carries no readable x402 payment requirement.",
  },
  seller_redirect_refused: {
    status: 502,
    message: "The seller redirected somewhere it may not.",
    meaning: "The seller redirected to another host, from https to http, to something that is not a URL, or more than 3 times.",
  },
  seller_response_too_large: {
    status: 502,
    message: "The seller's response is too large.",
    meaning: "The seller's response is larger than SELLER_MAX_BYTES.",
  },
  unavailable: {
    status: 503,
    message: "The service cannot act now; retry later.",
    meaning:
      "The service cannot act now: the chain or the store does not answer, or this instance cannot relay (e.g. it is not the operator of the agent's policy contract). Always `retryable: true` with `Retry-After`.",
  },
  upstream_timeout: {
    status: 504,
    message: "The seller did not answer in time.",
    meaning: "The seller did not answer within SELLER_TIMEOUT_MS.",
  },
} satisfies Record<string, ErrorSpec>;

/** Every `error` code of `{ error, message, status }` bodies. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_CATALOGUE, code);

export interface AppErrorOptions {
  details?: unknown;
  headers?: Record<string, string>;
  /** Transient: nothing was done or kept (not even under an Idempotency-Key); the same request may succeed later. */
  retryable?: boolean;
}

export class AppError extends Error {
  readonly status: number;
  readonly details?: unknown;
  readonly headers?: Record<string, string>;
  readonly retryable: boolean;

  /** Use appError() or a named constructor; `status` is the catalogue's unless httpError passes a client error's own. */
  constructor(
    readonly code: ErrorCode,
    message: string | undefined,
    options: AppErrorOptions = {},
    status: number = ERROR_CATALOGUE[code].status,
  ) {
    super(message ?? ERROR_CATALOGUE[code].message);
    this.name = "AppError";
    this.status = status;
    this.details = options.details;
    this.headers = options.headers;
    this.retryable = options.retryable ?? false;
  }
}

/** The AppError of `code`: the catalogue's status, and its default message unless `message` is given. */
export function appError(code: ErrorCode, message?: string, options?: AppErrorOptions): AppError {
  return new AppError(code, message, options);
}

/**
 * `err` as a transient answer: the body says `retryable: true` and `Retry-After` says when to try again. An
 * Idempotency-Key never keeps such an answer (see services/idempotency.ts).
 */
export function transient(err: AppError, retryAfterSeconds: number): AppError {
  const headers = { ...err.headers, "Retry-After": String(Math.max(1, Math.ceil(retryAfterSeconds))) };
  return new AppError(err.code, err.message, { details: err.details, headers, retryable: true }, err.status);
}

/**
 * An HTTP status from Koa, the router or a body parser, kept as it is: `not_found` for 404, `bad_request` for another
 * 4xx, `internal` for a 5xx. With transient and appErrorOf (which keep an AppError's own), the one place a status is
 * not the catalogue's.
 */
export function httpError(status: number, message?: string): AppError {
  return new AppError(status === 404 ? "not_found" : status < 500 ? "bad_request" : "internal", message, {}, status);
}

export const badRequest = (message: string, details?: unknown) => appError("bad_request", message, { details });
export const unauthorized = (message?: string) => appError("unauthorized", message);
export const invalidSignature = (message: string) => appError("invalid_signature", message);
export const forbidden = (message: string) => appError("forbidden", message);
export const notFound = (message: string) => appError("not_found", message);
export const conflict = (message: string, details?: unknown) => appError("conflict", message, { details });
export const payloadTooLarge = (message?: string) => appError("payload_too_large", message);
export const unsupportedMediaType = (message?: string) => appError("unsupported_media_type", message);
export const rateLimited = (retryAfterSeconds: number) =>
  transient(appError("rate_limited", `Too many requests; retry after ${retryAfterSeconds} s.`), retryAfterSeconds);
export const upstreamError = (message: string, details?: unknown) => appError("upstream_error", message, { details });
/** The Retry-After of a 503 `unavailable`. */
export const UNAVAILABLE_RETRY_S = 5;
/** A dependency (the chain, the store) or this instance cannot serve the request now: 503, retryable. */
export const unavailable = (message: string, retryAfterSeconds = UNAVAILABLE_RETRY_S, details?: unknown) =>
  transient(appError("unavailable", message, { details }), retryAfterSeconds);
export const gatewayTimeout = (message: string) => appError("upstream_timeout", message);

/** The message of a 415 for a Content-Encoding the service does not decode. */
export const UNSUPPORTED_ENCODING = "Unsupported Content-Encoding: send gzip, deflate, br or none.";

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
    super("conflict", message, { headers: { "Retry-After": "1" }, retryable: true });
  }
}

/** The AppError an error body stands for (an answer kept under an Idempotency-Key, given again). */
export function appErrorOf(
  body: { error: string; message: string; status: number; details?: unknown; retryable?: boolean },
  headers?: Record<string, string>,
) {
  // Kept bodies were written from AppErrors, status included; a code since dropped from the catalogue reads as internal.
  const code = isErrorCode(body.error) ? body.error : "internal";
  return new AppError(code, body.message, { details: body.details, headers, retryable: body.retryable === true }, body.status);
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

/** Maps errors from Koa, the body parser and the code into the interface's shape; internals are never shown. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  // The store or the chain does not answer: 503, retryable (never a 500).
  const down = dependencyDown(err);
  if (down) return dependencyUnavailable(down);
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string };
  const status = e.status ?? e.statusCode;
  if (status === 413 || e.type === "entity.too.large") return payloadTooLarge();
  if (e.type === "encoding.unsupported") return unsupportedMediaType(UNSUPPORTED_ENCODING);
  if (status === 415) return unsupportedMediaType();
  // A body whose Content-Encoding does not decode (zlib's errors carry no status): the client's fault.
  if (typeof (e as { code?: unknown }).code === "string" && /^(Z_|ERR_ZLIB|ERR_BROTLI|ERR__ERROR_)/.test((e as { code: string }).code)) {
    return badRequest("The request body could not be decoded with its Content-Encoding.");
  }
  // co-body throws a SyntaxError with status 400 and no `expose` for bad JSON, non-object JSON and __proto__ keys.
  if (e.type === "entity.parse.failed" || (status === 400 && (e.expose || err instanceof SyntaxError))) {
    return badRequest("The request body is not valid JSON (an object is expected).");
  }
  if (status && status >= 400 && status < 500) {
    // A client error from Koa or a parser: never a 500, and its message only when it is meant to be shown.
    return httpError(status, e.expose && e.message ? e.message : "Bad request.");
  }
  return appError("internal");
}

/** A zod error's issues as the `details` of a 400: `{ path, message }` each (REST and MCP alike). */
export function formatIssues(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.join(".") || "(root)", message: i.message }));
}
