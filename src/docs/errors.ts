/** Every error code the service answers with, every block reason and ledger status: the API reference's tables. */
import { REASON_TABLE } from "../chain/reasons";
import type { LedgerStatus } from "../store/documents";

export interface ErrorCodeDoc {
  status: number;
  meaning: string;
}

/** `error` codes of `{ error, message, status }` bodies. A test checks that every code in src/ is listed here. */
export const ERROR_CODES = {
  bad_request: {
    status: 400,
    meaning: "A field, query parameter or header is invalid; `details` lists each problem as `{ path, message }`.",
  },
  unauthorized: { status: 401, meaning: "No API key where one is needed, or an unknown, revoked or expired key." },
  invalid_signature: { status: 401, meaning: "An owner signature does not verify, was already used, or its timestamp is outside ±300 s." },
  forbidden: {
    status: 403,
    meaning:
      "The key may not act for this agent (another agent's, or not linked to this owner) or may not make this call (agents cannot approve, deny or create agents).",
  },
  not_found: { status: 404, meaning: "No such route, agent, approval or transaction (another caller's resources answer the same)." },
  method_not_allowed: { status: 405, meaning: "The path exists but not with this method; the `Allow` header lists the methods." },
  conflict: {
    status: 409,
    meaning:
      "Already registered, already linked, already resolved, an Idempotency-Key reused with another body, or a stale signed timestamp; with `retryable: true`, another payment of the agent is still in flight (nothing was paid, retry after `Retry-After`).",
  },
  price_changed: { status: 409, meaning: "Approve: the seller's price rose above the approved amount; the approval stays pending." },
  payee_changed: {
    status: 409,
    meaning:
      "Approve: the seller now asks to be paid at another address than the owner signed (ApprovalDecision.payTo); the approval stays pending.",
  },
  payload_too_large: { status: 413, meaning: "The request body is too large (64 KiB for REST, 256 KiB for an MCP message)." },
  unsupported_media_type: { status: 415, meaning: "A request body that is not `application/json`." },
  no_policy: { status: 422, meaning: "POST /pay for an agent whose owner has not set a spend policy yet." },
  payment_not_required: { status: 422, meaning: "The seller answered 2xx without asking for payment; nothing was paid." },
  unsupported_payment: { status: 422, meaning: "Approve: the seller no longer offers an exact USDC payment on this chain." },
  unsafe_seller_address: {
    status: 422,
    meaning: "The seller's host resolves to a private, loopback or link-local address (refused unless ALLOW_PRIVATE_SELLERS).",
  },
  insufficient_funds: { status: 422, meaning: "Withdraw: the agent wallet holds less of the token than asked." },
  withdraw_failed: {
    status: 422,
    meaning:
      "Withdraw: the recipient or the token refused the transfer (a contract that does not accept ETH, a balance another withdrawal or a payment took meanwhile); nothing moved.",
  },
  insecure_webhook_url: {
    status: 422,
    meaning: "A webhook URL that is plain http where only https receivers are allowed (ALLOW_HTTP_SELLERS, the seller rule).",
  },
  unsafe_webhook_url: {
    status: 422,
    meaning:
      "A webhook host that resolves to a private, loopback or link-local address, or does not resolve (refused unless ALLOW_PRIVATE_SELLERS).",
  },
  insecure_seller: {
    status: 422,
    meaning:
      "The seller is plain http (refused unless ALLOW_HTTP_SELLERS, the embedded default): its payment header would travel in clear.",
  },
  blocked: {
    status: 422,
    meaning: "Approve: the approved payment was blocked on-chain (the body's `details` is the blocked payment result).",
  },
  gas_allowance_exceeded: {
    status: 429,
    meaning:
      "The operator gas this owner's agents may cost per UTC day (OWNER_GAS_ALLOWANCE_GWEI) is spent; see GET /owner/gas and `Retry-After`. Pauses, withdrawals and hand-overs are never refused.",
  },
  headers_too_large: {
    status: 431,
    meaning: "The request's headers are larger than the server reads (Node's limit); the connection is closed.",
  },
  too_many_pending_approvals: {
    status: 429,
    meaning:
      "POST /pay: the agent already has 20 payments waiting for its owner; nothing was paid or recorded. Wait for decisions or expiry.",
  },
  rate_limited: { status: 429, meaning: "Too many requests for this key (or address) this minute; see `Retry-After`." },
  internal: { status: 500, meaning: "An unexpected error on the service's side; nothing was charged." },
  upstream_error: {
    status: 502,
    meaning:
      "The seller or the facilitator failed (unreachable, not a 402, verify or settle refused); the budget was released. With `retryable: true` the seller was out of reach before anything was signed or sent: retry, with the same Idempotency-Key, after `Retry-After`.",
  },
  invalid_payment_required: { status: 502, meaning: "The seller's 402 carries no readable x402 payment requirement." },
  seller_redirect_refused: {
    status: 502,
    meaning: "The seller redirected to another host, from https to http, to something that is not a URL, or more than 3 times.",
  },
  seller_response_too_large: { status: 502, meaning: "The seller's response is larger than SELLER_MAX_BYTES." },
  unavailable: {
    status: 503,
    meaning:
      "The service cannot act now: the chain or the store does not answer, or this instance cannot relay (e.g. it is not the operator of the agent's policy contract). Always `retryable: true` with `Retry-After`.",
  },
  upstream_timeout: { status: 504, meaning: "The seller did not answer within SELLER_TIMEOUT_MS." },
} satisfies Record<string, ErrorCodeDoc>;
export type ErrorCode = keyof typeof ERROR_CODES;

/** `reason` of a blocked payment (422 `{ status: "blocked" }`). */
export const BLOCK_REASONS: Record<string, string> = Object.fromEntries(
  REASON_TABLE.map((r) => [r.name, r.code === null ? r.meaning : `${r.meaning} (on-chain reason ${r.code})`]),
);

export const LEDGER_STATUSES: Record<LedgerStatus, string> = {
  approved: "paid and settled",
  blocked:
    "refused by the policy (PaymentBlocked on-chain, including a swap past its bound), by the caller's maxAmount, or for want of funds",
  pending: "above the approval threshold; waits for the owner",
  denied: "the owner denied it",
  failed: "authorised but not settled; the day's budget was released",
  expired: "an approval nobody decided in time (APPROVAL_TTL)",
  processing: "between authorisation and settlement; a restart resolves it from chain state",
};
