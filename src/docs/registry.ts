/**
 * Every HTTP route of the service, described once: auth, inputs (the zod schemas the routes validate with),
 * responses and error codes. The OpenAPI document and the API reference are generated from this list; a test
 * checks it against the routes the Koa app really registers, so a route cannot go undocumented.
 */
import { z } from "zod";
import { PauseRequest } from "../http/routes/controls";
import {
  ActivationResponse,
  AddressQuery,
  AgentsResponse,
  BalanceResponse,
  GenesisRequest,
  GenesisResponse,
  LinkRequest,
  LinkResponse,
  OptionalAddressQuery,
  SiweNonceRequest,
  SiweNonceResponse,
  SiweVerifyRequest,
  SiweVerifyResponse,
} from "../schemas/accounts";
import { Address } from "../schemas/common";
import { LimitsResponse, PauseResponse, SetLimitsRequest, SetLimitsResponse } from "../schemas/limits";
import {
  FaucetRequest,
  FaucetResponse,
  LedgerEntry,
  LedgerQuery,
  LedgerResponse,
  PayRequest,
  PayResult,
  TransactionId,
} from "../schemas/payments";
import { AgentIntel, HealthResponse, JsonRpcMessage, JsonRpcResponse, PaymentChallenge } from "../schemas/system";
import { APPROVAL_ROUTES } from "./registry.approvals";
import { SELLER_ERRORS, SIGNED, json, markdown } from "./registryParts";
import { DASHBOARD_ROUTES } from "./registry.dashboard";
import { OWNER_ROUTES } from "./registry.owner";
import { WEBHOOK_ROUTES } from "./registry.webhooks";

export type AuthMode = "none" | "key" | "owner" | "genesis" | "x402" | "mcp";
export type SignedType = "SetPolicy" | "SetPaused" | "ApprovalDecision" | "LinkAgent" | "SIWE" | "Withdraw" | "SetOwner";

export interface ResponseDoc {
  description: string;
  schema?: z.ZodType;
  /** Default application/json. */
  contentType?: string;
  headers?: Record<string, string>;
}

export interface RouteDoc {
  method: "GET" | "POST" | "DELETE";
  /** Koa style: /approvals/:id/approve */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  auth: AuthMode;
  signature?: SignedType;
  params?: Record<string, { schema: z.ZodType; description: string }>;
  query?: z.ZodObject;
  headers?: { name: string; required: boolean; description: string }[];
  body?: z.ZodType;
  responses: Record<number, ResponseDoc>;
  /** Error codes (ERROR_CODES) this route can answer, beyond rate_limited and internal, which every route can. */
  errors: string[];
}

export const AUTH_MODES: Record<AuthMode, string> = {
  none: "none",
  key: "Bearer API key (the agent's key, or an owner key for its linked agents)",
  owner: "Bearer owner key (SIWE sign-in); agent keys get 403",
  genesis: "none while registration is open (GENESIS_OPEN), else an owner key or the operator's REGISTRATION_TOKEN",
  x402: "x402 payment header (PAYMENT-SIGNATURE v2 or X-PAYMENT v1); the challenge is public",
  mcp: "Bearer API key plus X-Agent-Address (the agent the tools act for)",
};

export const ROUTES: RouteDoc[] = [
  {
    method: "GET",
    path: "/health",
    tag: "System",
    summary: "Health: the store and the chain answer",
    auth: "none",
    responses: { 200: json("healthy", HealthResponse), 503: json("degraded: the store or the chain does not answer", HealthResponse) },
    errors: [],
  },
  {
    method: "POST",
    path: "/wallet/genesis",
    tag: "Agents",
    summary: "Create an agent wallet and its API key",
    description:
      "Creates a wallet (the key stays encrypted on the server) and an agent API key, shown once. With an owner key the " +
      "agent is created already linked. The same email and label again is 409. `message` holds the owner's activation link.",
    auth: "genesis",
    body: GenesisRequest,
    responses: { 201: json("created", GenesisResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "conflict"],
  },
  {
    method: "POST",
    path: "/agents/link",
    tag: "Owners",
    summary: "Link an agent to its owner",
    description:
      "No API key: the owner's LinkAgent signature (service domain) proves who the owner is, and `activationCode` (the `code` of the agent's activation link) proves the owner got the link from the agent. With the agent's own key as Bearer the code is not needed.",
    auth: "none",
    signature: "LinkAgent",
    body: LinkRequest,
    responses: { 200: json("linked", LinkResponse) },
    errors: ["bad_request", "forbidden", "not_found", "conflict", ...SIGNED],
  },
  {
    method: "GET",
    path: "/wallet/activation",
    tag: "Agents",
    summary: "The agent's activation link again (with its code), for the agent or its owner",
    auth: "key",
    query: AddressQuery,
    responses: { 200: json("the activation link", ActivationResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
  },
  {
    method: "GET",
    path: "/wallet/agents",
    tag: "Agents",
    summary: "Agents visible to the key",
    auth: "key",
    responses: { 200: json("the key's agent, or every agent linked to the owner", AgentsResponse) },
    errors: ["unauthorized"],
  },
  {
    method: "GET",
    path: "/wallet/balance",
    tag: "Agents",
    summary: "USDC, ETH and WETH balances and today's budget, read from chain",
    auth: "key",
    query: AddressQuery,
    responses: { 200: json("balances", BalanceResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
  },
  {
    method: "POST",
    path: "/auth/siwe/nonce",
    tag: "Owners",
    summary: "Owner sign-in, step 1: a one-time nonce",
    auth: "none",
    body: SiweNonceRequest,
    responses: { 200: json("nonce for the SIWE message", SiweNonceResponse) },
    errors: ["bad_request"],
  },
  {
    method: "POST",
    path: "/auth/siwe/verify",
    tag: "Owners",
    summary: "Owner sign-in, step 2: the signed SIWE message for an owner key",
    description:
      "EIP-4361 message: domain = the API's host, URI = its origin, chain id 8453, the nonce from step 1; signed with personal_sign.",
    auth: "none",
    signature: "SIWE",
    body: SiweVerifyRequest,
    responses: { 200: json("the owner key (shown once) and its expiry", SiweVerifyResponse) },
    errors: ["bad_request", ...SIGNED],
  },
  {
    method: "GET",
    path: "/limits",
    tag: "Policy",
    summary: "Spend policies, read from the agents' SpendPolicy contracts",
    description:
      "For an agent without a policy yet, `policyContract` is the factory's predicted address and `deployed` is false. " +
      "`windows` lists the day's window and each other window the policy limits (hourly, weekly, monthly = 30 days, lifetime) " +
      "with budget, spent, remaining and `resetsAt` (fixed windows aligned to UTC); `velocity` the payments left this hour; " +
      "`merchantRemainingToday` what each capped allowlist entry has left today.",
    auth: "key",
    query: OptionalAddressQuery,
    headers: [{ name: "X-Owner-Address", required: false, description: "403 unless every agent answered is linked to this owner" }],
    responses: { 200: json("one entry per agent", LimitsResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
  },
  {
    method: "POST",
    path: "/limits",
    tag: "Policy",
    summary: "Deploy or update an agent's on-chain spend policy",
    description:
      "Needs the owner's SetPolicy signature over every field (policy domain); the first call deploys the agent's SpendPolicy. " +
      "The optional limits (hourlyBudget, weeklyBudget, monthlyBudget, lifetimeBudget, maxPaymentsPerHour, validUntil, " +
      'swapTwapSeconds, merchantCaps) are 0, "no such limit", when absent, and are signed as 0. `merchantCaps` maps allowlist ' +
      "entries to their own daily cap (its leaf in the allowlist Merkle tree is [entry, cap]). maxSwapSlippageBps (at most " +
      "1000; 0 = no swaps) lets POST /pay buy a missing USDC shortfall with the wallet's WETH or ETH, at most that many basis " +
      "points above the pool's TWAP over swapTwapSeconds (60 to 3600 when swaps are on; 400 otherwise).",
    auth: "key",
    signature: "SetPolicy",
    body: SetLimitsRequest,
    responses: { 201: json("deployed or updated on-chain", SetLimitsResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "conflict", "unavailable", "gas_allowance_exceeded", ...SIGNED],
  },
  {
    method: "POST",
    path: "/agents/:address/pause",
    tag: "Policy",
    summary: "Kill switch: pause or resume an agent's payments on-chain",
    auth: "key",
    signature: "SetPaused",
    params: { address: { schema: Address, description: "the agent" } },
    body: PauseRequest,
    responses: { 200: json("the pause state on-chain", PauseResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found", "conflict", "unavailable", ...SIGNED],
  },
  {
    method: "POST",
    path: "/pay",
    tag: "Payments",
    summary: "Pay an x402 seller under the agent's spend policy",
    description:
      "Policy first (before any value moves), then the seller's 402 quote, the contract's check, and one of three outcomes: " +
      "200 approved (paid and settled), 202 pending (the owner decides; do not retry), 422 blocked (PaymentBlocked " +
      "recorded on-chain; never retry). Policy, then swap, then x402 settlement: when the agent wallet holds less USDC " +
      "than the price and its owner's policy allows swaps (maxSwapSlippageBps > 0), the wallet first buys exactly the " +
      "shortfall with its WETH (then its ETH) through Uniswap v3's SwapRouter02, never above the pool's TWAP over " +
      "swapTwapSeconds plus the pool fee plus maxSwapSlippageBps (checked by the wallet contract); the 200 answer and the " +
      "ledger then carry `swap`. A price past that bound is blocked `swap_slippage_exceeded` (on-chain, nothing spent, the " +
      "budget released); a shortfall nothing can buy (swaps off, too little WETH and ETH) is blocked `insufficient_funds` " +
      "before any transaction. When the payment fails after its swap, the USDC bought stays in the wallet. " +
      "An `Idempotency-Key` header makes retries safe: the same key and body answer the first result.",
    auth: "key",
    headers: [{ name: "Idempotency-Key", required: false, description: "1-200 printable ASCII characters; kept 24 h per API key" }],
    body: PayRequest,
    responses: {
      200: json("approved: paid and settled", PayResult, {
        "Idempotent-Replayed": "true when answered from an earlier request with the same key",
      }),
      202: json("pending: waits for the owner's approval", PayResult),
      422: json("blocked by the policy (status blocked, reason, onchainEvent PaymentBlocked), or an error below", PayResult),
    },
    errors: [
      "bad_request",
      "unauthorized",
      "forbidden",
      "conflict",
      "no_policy",
      "payment_not_required",
      "gas_allowance_exceeded",
      ...SELLER_ERRORS,
    ],
  },
  ...APPROVAL_ROUTES,
  {
    method: "GET",
    path: "/ledger",
    tag: "Ledger",
    summary: "Payment records, newest first",
    auth: "key",
    query: LedgerQuery,
    responses: { 200: json("a page of the ledger and the total", LedgerResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
  },
  {
    method: "GET",
    path: "/ledger/:id",
    tag: "Ledger",
    summary: "One payment record",
    auth: "key",
    params: { id: { schema: TransactionId, description: "the transaction id (txn_...)" } },
    responses: { 200: json("the record", LedgerEntry) },
    errors: ["unauthorized", "forbidden", "not_found"],
  },
  {
    method: "POST",
    path: "/dev/faucet",
    tag: "System",
    summary: "Give an agent test USDC, ETH or WETH (embedded mode only)",
    description:
      "`token` is USDC (minted, the default), ETH (sent by the operator) or WETH (wrapped and sent by the operator); " +
      "`amount` is in that token's units. At most 1000000 USDC or 1000 ETH/WETH at a time. Outside embedded mode the route answers 404.",
    auth: "none",
    body: FaucetRequest,
    responses: { 200: json("given: the transaction that delivered it", FaucetResponse) },
    errors: ["bad_request", "not_found"],
  },
  ...(["GET", "POST"] as const).map((method): RouteDoc => ({
    method,
    path: "/sell/agent-intel",
    tag: "Seller",
    summary: `SpendGate as an x402 seller: the paying agent's portfolio (${method})`,
    description:
      "Unpaid: 402 with the v1 JSON body, the v2 PAYMENT-REQUIRED header and X-Service-Amount, X-Service-Network, " +
      "X-Service-Chain-Id, X-Service-Token, X-Service-Receiver. Paid: verified and settled through x402, then the resource.",
    auth: "x402",
    headers: [
      { name: "PAYMENT-SIGNATURE", required: false, description: "x402 v2 payment payload (base64 JSON)" },
      { name: "X-PAYMENT", required: false, description: "x402 v1 payment payload (base64 JSON)" },
    ],
    responses: {
      200: json("paid: the resource", AgentIntel, { "PAYMENT-RESPONSE": "v2 settlement (base64 JSON); X-PAYMENT-RESPONSE for v1" }),
      402: json("payment required, or the payment was refused (`error` says why)", PaymentChallenge, {
        "PAYMENT-REQUIRED": "x402 v2 payment requirement (base64 JSON)",
        "X-Service-Amount": "price in USDC",
        "X-Service-Network": "network name",
        "X-Service-Token": "USDC contract",
        "X-Service-Receiver": "receiving address",
      }),
    },
    errors: ["upstream_error"],
  })),
  {
    method: "POST",
    path: "/mcp",
    tag: "MCP",
    summary: "MCP tool server (stateless Streamable HTTP, JSON answers)",
    description:
      "Tools: get_limits, verify_merchant, pay, get_balance, list_transactions, get_payment (see MCP tools). The key and " +
      "X-Agent-Address are checked before the MCP layer: 401 without a valid key, 400 without a valid address, 403 for an " +
      "agent the key may not act for. Clients must accept application/json and text/event-stream.",
    auth: "mcp",
    headers: [{ name: "X-Agent-Address", required: true, description: "the agent the tools act for" }],
    body: JsonRpcMessage,
    responses: {
      200: json("the JSON-RPC response", JsonRpcResponse),
      202: { description: "a notification or response was accepted (no body)" },
      406: json("JSON-RPC error: the Accept header must allow application/json and text/event-stream", JsonRpcResponse),
    },
    errors: ["bad_request", "unauthorized", "forbidden", "payload_too_large", "unsupported_media_type"],
  },
  ...(["GET", "DELETE"] as const).map((method): RouteDoc => ({
    method,
    path: "/mcp",
    tag: "MCP",
    summary: `Not offered by the stateless MCP server (${method})`,
    description: "No server-sent event stream and no session: 405 with `Allow: POST`.",
    auth: "none",
    responses: {},
    errors: ["method_not_allowed"],
  })),
  {
    method: "GET",
    path: "/skill.md",
    tag: "Docs",
    summary: "Onboarding file for agents (config, genesis, MCP registration, behaviour rules)",
    auth: "none",
    responses: { 200: markdown("the onboarding markdown, with this deployment's URLs") },
    errors: [],
  },
  {
    method: "GET",
    path: "/references/api_docs.md",
    tag: "Docs",
    summary: "This API reference as markdown",
    auth: "none",
    responses: { 200: markdown("the API reference") },
    errors: [],
  },
  {
    method: "GET",
    path: "/openapi.json",
    tag: "Docs",
    summary: "This API as an OpenAPI 3.1 document",
    auth: "none",
    responses: { 200: { description: "the OpenAPI document" } },
    errors: [],
  },
  ...OWNER_ROUTES,
  ...WEBHOOK_ROUTES,
  ...DASHBOARD_ROUTES,
];

/** The Koa path in OpenAPI form: /approvals/:id/approve -> /approvals/{id}/approve. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, "{$1}");
