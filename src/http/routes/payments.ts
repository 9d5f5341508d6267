/** Payments, approvals, the ledger and the embedded dev faucet. */
import { parseUnits } from "ethers";
import { z } from "zod";
import { appErrorOf, badRequest, notFound } from "../../errors";
import { OptionalAddressQuery } from "../../schemas/accounts";
import {
  ApprovalDecisionRequest,
  ApprovalIdParam,
  ApprovalsResponse,
  ApproveResponse,
  DenyResponse,
  FAUCET_TOKENS,
  FaucetRequest,
  FaucetResponse,
  LedgerEntry,
  LedgerQuery,
  LedgerResponse,
  type PayAnswer,
  PayBody,
  PayResult,
  TransactionId,
} from "../../schemas/payments";
import { SELLER_ERRORS, SIGNED, json, operation, reply } from "../../api/operation";

/** The one place a payment's answer becomes HTTP: 200 approved, 202 pending, 422 blocked, or its error. */
function payReply(answer: PayAnswer & { replayed: boolean }) {
  const headers = answer.replayed ? { "Idempotent-Replayed": "true" } : undefined;
  if ("error" in answer) throw appErrorOf(answer.error, { ...answer.headers, ...headers });
  const o = answer.outcome;
  if (o.status === "approved") return reply(200, o, headers);
  return o.status === "pending" ? reply(202, o, headers) : reply(422, o, headers);
}

const APPROVAL_PATH = z.strictObject({ id: ApprovalIdParam.meta({ description: "the approvalId (apr_...)" }) });
const approvalNotFound = (p: Record<string, string>) => `Approval ${p.id} not found.`;

export const PAY_OPERATION = operation({
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
  // Paying is the agent's: owner keys read, approve and set limits.
  auth: "agent",
  input: z.object({ body: PayBody }),
  headers: [{ name: "Idempotency-Key", required: false, description: "1-200 printable ASCII characters; kept 24 h per API key" }],
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
    "too_many_pending_approvals",
    ...SELLER_ERRORS,
  ],
  handle: async ({ input, principal, ctx, deps: { networks } }) => {
    const key = ctx.get("Idempotency-Key") || undefined;
    // Only agent keys pay, and each names one agent: an unnamed agent is the key's own.
    if (principal.role !== "agent" && !input.body.agentAddress) throw badRequest("agentAddress is required with this key.");
    const body = { ...input.body, agentAddress: input.body.agentAddress ?? (principal.role === "agent" ? principal.agentAddress : "") };
    // With one network, an agent key naming its own agent pays without waiting for its document: read beside the
    // payment's first store step (its Idempotency-Key, or its agent lock), or once its turn comes when another payment
    // of the agent runs here (payOnce), and checked as ever (its network too). Any other caller, and any agent of a
    // service of several networks, is read first: its network's services pay.
    const own = principal?.role === "agent" && principal.agentAddress === body.agentAddress;
    if (own && networks.all.length === 1) {
      const s = networks.first;
      const agent = () => s.agents.authorize(principal, body.agentAddress).then((a) => (networks.of(a), a));
      return payReply(await s.payments.payOnce(principal, agent, body, key));
    }
    const { agent, s } = await networks.authorize(principal, body.agentAddress);
    return payReply(await s.payments.payOnce(principal, agent, body, key));
  },
});

/** The owner's decisions on pending payments. */
export const APPROVAL_OPERATIONS = [
  operation({
    method: "GET",
    path: "/approvals",
    tag: "Approvals",
    summary: "Pending approvals of the owner's agents",
    auth: "owner",
    input: z.object({ query: OptionalAddressQuery }),
    responses: { 200: json("pending approvals", ApprovalsResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
    handle: async ({ input, principal, deps: { s } }) => reply(200, await s.approvals.list(principal.ownerAddress, input.query.address)),
  }),
  operation({
    method: "POST",
    path: "/approvals/:id/approve",
    tag: "Approvals",
    summary: "Approve a pending payment: the service pays it",
    description: "The owner's ApprovalDecision signature (action approve) is also checked on-chain. The seller's price is fetched again.",
    auth: "owner",
    signature: "ApprovalDecision",
    input: z.object({ params: APPROVAL_PATH, body: ApprovalDecisionRequest }),
    notFound: approvalNotFound,
    responses: { 200: json("approved and paid", ApproveResponse) },
    errors: [
      "bad_request",
      "unauthorized",
      "forbidden",
      "not_found",
      "conflict",
      "price_changed",
      "payee_changed",
      "unsupported_payment",
      "blocked",
      ...SIGNED,
      ...SELLER_ERRORS,
    ],
    // The owner signs ApprovalDecision for the agent's chain, and the payment is made there: its network's services.
    handle: async ({ input, principal, deps: { networks } }) =>
      reply(200, await (await networks.forApproval(input.params.id)).approvals.approve(principal, input.params.id, input.body)),
  }),
  operation({
    method: "POST",
    path: "/approvals/:id/deny",
    tag: "Approvals",
    summary: "Deny a pending payment",
    auth: "owner",
    signature: "ApprovalDecision",
    input: z.object({ params: APPROVAL_PATH, body: ApprovalDecisionRequest }),
    notFound: approvalNotFound,
    responses: { 200: json("denied; nothing moves", DenyResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found", "conflict", ...SIGNED],
    handle: async ({ input, principal, deps: { networks } }) =>
      reply(200, await (await networks.forApproval(input.params.id)).approvals.deny(principal, input.params.id, input.body)),
  }),
];

export const LEDGER_OPERATIONS = [
  operation({
    method: "GET",
    path: "/ledger",
    tag: "Ledger",
    summary: "Payment records, newest first",
    auth: "either",
    input: z.object({ query: LedgerQuery }),
    responses: { 200: json("a page of the ledger and the total", LedgerResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
    handle: async ({ input: { query }, principal, deps: { s } }) => {
      if (query.address) await s.agents.authorize(principal, query.address);
      return reply(200, await s.ledger.list(principal, query));
    },
  }),
  operation({
    method: "GET",
    path: "/ledger/:id",
    tag: "Ledger",
    summary: "One payment record",
    auth: "either",
    input: z.object({ params: z.strictObject({ id: TransactionId.meta({ description: "the transaction id (txn_...)" }) }) }),
    notFound: (p) => `Transaction ${p.id} not found.`,
    responses: { 200: json("the record", LedgerEntry) },
    errors: ["unauthorized", "forbidden", "not_found"],
    handle: async ({ input, principal, deps: { s } }) => {
      const doc = await s.ledger.get(input.params.id);
      if (!doc) throw notFound(`Transaction ${input.params.id} not found.`);
      await s.agents.authorize(principal, doc.agentAddress);
      return reply(200, s.ledger.view(doc));
    },
  }),
];

export const FAUCET_OPERATION = operation({
  method: "POST",
  path: "/dev/faucet",
  tag: "System",
  summary: "Give an agent test USDC, ETH or WETH (embedded mode only)",
  description:
    "`token` is USDC (minted, the default), ETH (the network's native coin, sent by the operator) or WETH (wrapped and sent by the operator; " +
    "400 on a network without WETH); `amount` is in that token's units. At most 1000000 USDC or 1000 ETH/WETH at a time. The chain is " +
    "`network`'s, by default the agent's (the first network's for an address that is no agent). Outside embedded mode the route answers 404.",
  auth: "none",
  input: z.object({ body: FaucetRequest }),
  responses: { 200: json("given: the transaction that delivered it", FaucetResponse) },
  errors: ["bad_request", "not_found"],
  handle: async ({ input: { body }, deps: { faucets, networks } }) => {
    if (!faucets) throw notFound("No route for POST /dev/faucet.");
    const network = body.network ?? (await networks.forAddress(body.agentAddress)).ctx.config.networkName;
    const faucet = faucets.get(network);
    if (!faucet) throw badRequest(`This sandbox runs no network ${network}: it runs ${[...faucets.keys()].join(", ")}.`);
    const units = parseUnits(body.amount, FAUCET_TOKENS[body.token].decimals);
    const txHash = await faucet(body.agentAddress, body.token, units);
    return reply(200, { agentAddress: body.agentAddress, amount: body.amount, currency: body.token, txHash });
  },
});
