/**
 * The agent's tools. Each one is one declaration (name, description, input and output schemas, which the API
 * reference also renders) plus a handler receiving its parsed input and answering data of its output schema; runTool
 * turns answers and errors into MCP results. No tool approves, denies or changes limits.
 */
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { z } from "zod";
import { appErrorOf, badRequest, forbidden, formatIssues, notFound } from "../errors";
import type { AgentSource } from "../payments";
import type { PayAnswer, PayRequest } from "../schemas/payments";
import type { Services } from "../services";
import type { Principal } from "../principal";
import type { AgentDoc } from "../store/documents";
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
  /** The agent the tools act for, already authorized for the principal. */
  address: string;
  /** Its document, read once when a tool needs more than the address. */
  agent: () => Promise<AgentDoc>;
  /** Its document as a payment takes it (payOnce): read already, or a function that reads it. */
  payer: () => AgentSource;
}

export interface ToolContext extends ToolCaller {
  s: Services;
  logger: Logger;
}

/** A tool's answer: data of its output schema, a line for the agent, and whether it is a refusal to act on (isError). */
export interface ToolAnswer<O extends z.ZodObject> {
  data: z.input<O>;
  lead?: string;
  refusal?: boolean;
}

export interface ToolDef<I extends z.ZodObject, O extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  run(ctx: ToolContext, input: z.output<I>): Promise<ToolAnswer<O>>;
}
export type AnyToolDef = ToolDef<z.ZodObject, z.ZodObject>;

const tool = <I extends z.ZodObject, O extends z.ZodObject>(def: ToolDef<I, O>): AnyToolDef => def;

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** The one place a payment's answer becomes a tool result: approved and pending are results, blocked a refusal. */
function payAnswer(answer: PayAnswer): ToolAnswer<typeof PayOutput> {
  if ("error" in answer) throw appErrorOf(answer.error, answer.headers);
  const o = answer.outcome;
  if (o.status === "approved") {
    const bought = o.swap ? ` First bought ${o.swap.amountOut} USDC for ${o.swap.amountIn} ${o.swap.tokenIn} (swap ${o.swap.txHash}).` : "";
    const remaining = o.remainingDailyBudget ?? "unknown";
    return {
      data: o,
      lead: `Paid ${o.amount} USDC to ${o.merchant} (settlement ${o.txHash}).${bought} Remaining daily budget: ${remaining} USDC.`,
    };
  }
  if (o.status === "pending") {
    return {
      data: o,
      lead:
        `Pending: ${o.amount} USDC to ${o.merchant} waits for your owner's approval (approvalId ${o.approvalId}). ` +
        `Wait for your owner and do not retry or pay again; check get_payment with transactionId ${o.transactionId} later.`,
    };
  }
  return {
    data: o,
    refusal: true,
    lead: `Blocked: ${o.reason} (${o.onchainEvent ?? "not recorded on-chain"}). Do not retry this payment: report the reason to your owner and stop.`,
  };
}

export const TOOLS: AnyToolDef[] = [
  tool({
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
    run: async ({ s, agent }) => ({ data: await s.policies.view(await agent()) }),
  }),
  tool({
    name: "verify_merchant",
    title: "Verify a merchant",
    description:
      "Check a seller URL before paying it, without paying: whether its host is on the allowlist, the seller's x402 " +
      "quote (price, network, asset, payTo), whether the merchant is new to this agent, and what pay would answer now.",
    input: VerifyMerchantInput,
    output: VerifyMerchantResult,
    annotations: { ...READ_ONLY, idempotentHint: true, openWorldHint: true },
    run: async ({ s, agent }, input) => ({ data: await verifyMerchant(s, await agent(), input.serviceUrl) }),
  }),
  tool({
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
    run: async ({ s, payer, principal, address }, input) => {
      // Paying is the agent's, as on POST /pay: an owner key at /mcp reads, it does not pay.
      if (principal.role !== "agent") throw forbidden("Only an agent pays: use the agent's own key (owners approve, deny and set limits).");
      const { idempotencyKey, ...fields } = input;
      // The agent's own key: its document is read beside the payment's first store step, or once its turn comes (as on
      // POST /pay).
      const request: PayRequest = { agentAddress: address, ...fields };
      return payAnswer(await s.payments.payOnce(principal, payer(), request, idempotencyKey));
    },
  }),
  tool({
    name: "get_balance",
    title: "Wallet balance",
    description: "This agent's USDC, ETH and WETH balances read from chain, with today's budget, spend and remainder.",
    input: NoInput,
    output: BalanceOutput,
    annotations: READ_ONLY,
    run: async ({ s, agent }) => ({ data: await s.wallet.balance(await agent()) }),
  }),
  tool({
    name: "list_transactions",
    title: "List transactions",
    description: "This agent's ledger, newest first: every payment attempt with its status, amount, merchant, intent and txHash.",
    input: ListTransactionsInput,
    output: TransactionsOutput,
    annotations: READ_ONLY,
    run: async ({ s, address, principal }, input) => ({ data: await s.ledger.list(principal, { ...input, address }) }),
  }),
  tool({
    name: "get_payment",
    title: "Get a payment",
    description: "One ledger transaction of this agent by its id (txn_...), e.g. to learn how a pending payment ended.",
    input: GetPaymentInput,
    output: PaymentOutput,
    annotations: READ_ONLY,
    run: async ({ s, address }, input) => {
      const doc = await s.ledger.get(input.transactionId);
      // Another agent's transaction gets the same answer as a missing one.
      if (!doc || doc.agentAddress !== address) throw notFound(`Transaction ${input.transactionId} not found.`);
      return { data: s.ledger.view(doc) };
    },
  }),
];

/**
 * Runs a tool: its input parsed with its schema (bad input is an isError bad_request naming the fields), its answer as
 * a result (a refusal as isError), any error as an isError result; the server keeps running.
 */
export async function runTool(def: AnyToolDef, ctx: ToolContext, args: unknown): Promise<CallToolResult> {
  try {
    const parsed = def.input.safeParse(args);
    if (!parsed.success) {
      const issues = formatIssues(parsed.error);
      throw badRequest(`Invalid arguments for ${def.name}: ${issues.map((i) => `${i.path} ${i.message}`).join("; ")}`, issues);
    }
    const answer = await def.run(ctx, parsed.data);
    return answer.refusal
      ? refusalResult(def.output, answer.data, ctx.logger, answer.lead ?? "")
      : okResult(def.output, answer.data, ctx.logger, answer.lead);
  } catch (err) {
    return errorResult(err, ctx.logger, def.name);
  }
}
