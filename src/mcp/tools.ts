/**
 * The agent's tools. Each one is data (name, description, input and output schemas, which the API reference also
 * renders) plus a handler calling the same services as REST. No tool approves, denies or changes limits.
 */
import type { ToolAnnotations, CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { z } from "zod";
import { forbidden, notFound } from "../errors";
import type { PayRequest } from "../schemas/payments";
import type { Services } from "../services";
import type { Principal } from "../services/keys";
import type { AgentDoc, LedgerStatus } from "../store/documents";
import { verifyMerchant } from "./merchant";
import { errorResult, okResult, refusalResult } from "./results";
import {
  BalanceOutput,
  GetPaymentInput,
  LimitsOutput,
  ListTransactionsInput,
  NoInput,
  PaymentOutput,
  PayOutput,
  PayToolInput,
  TransactionsOutput,
  VerifyMerchantInput,
  VerifyMerchantResult,
} from "./schemas";

/** Who is calling: resolved from the Bearer key and X-Agent-Address before the MCP layer. */
export interface ToolCaller {
  principal: Exclude<Principal, { role: "registrar" }>;
  agent: AgentDoc;
}

export interface ToolContext extends ToolCaller {
  s: Services;
  logger: Logger;
}

export interface ToolDef {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each tool's own input type, parsed by its schema
  run(ctx: ToolContext, input: any): Promise<CallToolResult>;
}

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

async function pay(ctx: ToolContext, input: z.infer<typeof PayToolInput>): Promise<CallToolResult> {
  const { s, agent, principal, logger } = ctx;
  // Paying is the agent's, as on POST /pay: an owner key at /mcp reads, it does not pay (DESIGN 6).
  if (principal.role !== "agent") throw forbidden("Only an agent pays: use the agent's own key (owners approve, deny and set limits).");
  const { idempotencyKey, ...fields } = input;
  const request: PayRequest = { agentAddress: agent.address, ...fields };
  const { status, body } = await s.payments.payOnce(principal, agent, request, idempotencyKey);
  const b = body as Record<string, string | undefined>;
  if (status === 200) {
    const swap = (body as { swap?: { amountIn: string; tokenIn: string; amountOut: string; txHash: string } }).swap;
    const bought = swap ? ` First bought ${swap.amountOut} USDC for ${swap.amountIn} ${swap.tokenIn} (swap ${swap.txHash}).` : "";
    return okResult(
      PayOutput,
      body,
      logger,
      `Paid ${b.amount} USDC to ${b.merchant} (settlement ${b.txHash}).${bought} Remaining daily budget: ${b.remainingDailyBudget} USDC.`,
    );
  }
  if (status === 202) {
    return okResult(
      PayOutput,
      body,
      logger,
      `Pending: ${b.amount} USDC to ${b.merchant} waits for your owner's approval (approvalId ${b.approvalId}). ` +
        `Wait for your owner and do not retry or pay again; check get_payment with transactionId ${b.transactionId} later.`,
    );
  }
  if (status === 422 && b.status === "blocked") {
    return refusalResult(
      PayOutput,
      body,
      logger,
      `Blocked: ${b.reason} (${b.onchainEvent ?? "not recorded on-chain"}). Do not retry this payment: report the reason to your owner and stop.`,
    );
  }
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }] };
}

export const TOOLS: ToolDef[] = [
  {
    name: "get_limits",
    title: "Spend limits",
    description:
      "Read this agent's spend policy from its on-chain SpendPolicy contract: perTxLimit, dailyBudget, spentToday, " +
      "remainingDailyBudget, allowlist, approvalThreshold, paused, and the richer limits: each budget window " +
      "(hourly, daily, weekly, monthly, lifetime) with what remains in it, per-merchant daily caps with what remains " +
      "today, payments left this hour (velocity) and validUntil. Call it before every spending decision.",
    input: NoInput,
    output: LimitsOutput,
    annotations: READ_ONLY,
    run: async ({ s, agent, logger }) => okResult(LimitsOutput, await s.policies.view(agent), logger),
  },
  {
    name: "verify_merchant",
    title: "Verify a merchant",
    description:
      "Check a seller URL before paying it, without paying: whether its host is on the allowlist, the seller's x402 " +
      "quote (price, network, asset, payTo), whether the merchant is new to this agent, and what pay would answer now.",
    input: VerifyMerchantInput,
    output: VerifyMerchantResult,
    annotations: { ...READ_ONLY, idempotentHint: true, openWorldHint: true },
    run: async ({ s, agent, logger }, input: z.infer<typeof VerifyMerchantInput>) =>
      okResult(VerifyMerchantResult, await verifyMerchant(s, agent, input.serviceUrl), logger),
  },
  {
    name: "pay",
    title: "Pay a seller",
    description:
      "Pay an x402 seller URL in USDC under this agent's on-chain spend policy. Answers approved (paid, with the " +
      "seller's response, and the swap when the wallet first bought missing USDC with its WETH or ETH), pending (waits for the owner: do not retry) or blocked (isError with reason and " +
      "onchainEvent: never retry, report and stop). Give a meaningful intent; maxAmount is your own ceiling. " +
      "Agent keys only: an owner key gets forbidden.",
    input: PayToolInput,
    output: PayOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    run: pay,
  },
  {
    name: "get_balance",
    title: "Wallet balance",
    description: "This agent's USDC, ETH and WETH balances read from chain, with today's budget, spend and remainder.",
    input: NoInput,
    output: BalanceOutput,
    annotations: READ_ONLY,
    run: async ({ s, agent, logger }) => okResult(BalanceOutput, await s.wallet.balance(agent), logger),
  },
  {
    name: "list_transactions",
    title: "List transactions",
    description: "This agent's ledger, newest first: every payment attempt with its status, amount, merchant, intent and txHash.",
    input: ListTransactionsInput,
    output: TransactionsOutput,
    annotations: READ_ONLY,
    run: async ({ s, agent, principal, logger }, input: { status?: LedgerStatus; limit: number; offset: number }) =>
      okResult(TransactionsOutput, await s.ledger.list(principal, { ...input, address: agent.address }), logger),
  },
  {
    name: "get_payment",
    title: "Get a payment",
    description: "One ledger transaction of this agent by its id (txn_...), e.g. to learn how a pending payment ended.",
    input: GetPaymentInput,
    output: PaymentOutput,
    annotations: READ_ONLY,
    run: async ({ s, agent, logger }, input: z.infer<typeof GetPaymentInput>) => {
      const doc = await s.ledger.get(input.transactionId);
      // Another agent's transaction gets the same answer as a missing one.
      if (!doc || doc.agentAddress !== agent.address) throw notFound(`Transaction ${input.transactionId} not found.`);
      return okResult(PaymentOutput, s.ledger.view(doc), logger);
    },
  },
];

/** Runs a tool; any error becomes an isError result (the agent reads it, the server keeps running). */
export async function runTool(def: ToolDef, ctx: ToolContext, input: unknown): Promise<CallToolResult> {
  try {
    return await def.run(ctx, input);
  } catch (err) {
    return errorResult(err, ctx.logger, def.name);
  }
}
