/**
 * Tool input and output schemas, derived from the shared REST schemas so both surfaces validate the same fields.
 * Roots are fresh objects without an `id`: MCP wants `type: "object"` at the root of every tool schema.
 */
import { z } from "zod";
import { USDC_DECIMALS, numberToDecimal } from "../amounts";
import { PaymentAmount } from "../schemas/common";
import { BalanceResponse } from "../schemas/accounts";
import { PolicyView } from "../schemas/limits";
import { LedgerEntry, LedgerQuery, LedgerResponse, PayRequest, PayResult, TransactionId } from "../schemas/payments";

/** The same fields as a shared object schema, as a new root schema (no `id`, so no top-level $ref). */
const rootOf = <S extends z.ZodRawShape>(schema: z.ZodObject<S>) => z.object(schema.shape);

export const NoInput = z.strictObject({});

export const VerifyMerchantInput = z.strictObject({
  serviceUrl: PayRequest.shape.serviceUrl,
});

/**
 * A payment amount as a tool argument: a decimal string, or a JSON number (what the MCP Inspector and most LLM clients
 * send). A number is read as the decimal it is written as (its shortest form: 0.05 is "0.05") and checked like the
 * string; more than 6 decimals is refused, never rounded.
 */
export const ToolPaymentAmount = z
  .union([z.string(), z.number()])
  .transform((v, ctx) => {
    if (typeof v === "string") return v;
    const decimal = numberToDecimal(v) ?? "";
    const decimals = decimal.split(".")[1]?.length ?? 0;
    const problem = !decimal
      ? "must be a finite number"
      : v <= 0
        ? "must be greater than 0"
        : decimals > USDC_DECIMALS
          ? `${decimal} has ${decimals} decimals; USDC has ${USDC_DECIMALS}: send at most ${USDC_DECIMALS} (amounts are never rounded)`
          : null;
    if (!problem) return decimal;
    ctx.addIssue({ code: "custom", message: problem, input: v });
    return z.NEVER;
  })
  .pipe(PaymentAmount)
  .meta({
    description: 'the most you allow to be paid, in USDC: a decimal string like "0.50" or a JSON number like 0.5 (at most 6 decimals)',
  });

export const PayToolInput = PayRequest.omit({ agentAddress: true }).extend({
  maxAmount: ToolPaymentAmount,
  idempotencyKey: z
    .string()
    .regex(/^[\x21-\x7e]{1,200}$/, "must be 1-200 printable ASCII characters")
    .optional()
    .meta({ description: "same key and same input: the first result is returned instead of paying twice" }),
});
export type PayToolInput = z.infer<typeof PayToolInput>;

export const ListTransactionsInput = LedgerQuery.omit({ address: true });
export const GetPaymentInput = z.strictObject({ transactionId: TransactionId });

export const QuoteView = z.object({
  price: z.string().meta({ description: "the seller's price in USDC (decimal string)" }),
  amount: z.string().meta({ description: "the price in USDC base units (6 decimals)" }),
  currency: z.literal("USDC"),
  scheme: z.string(),
  network: z.string().meta({ description: "x402 network: eip155:8453 (v2) or base (v1)" }),
  asset: z.string().meta({ description: "token contract the seller wants" }),
  payTo: z.string().meta({ description: "the seller's receiving address" }),
  x402Version: z.number().int(),
});

export const VerifyMerchantResult = z.object({
  serviceUrl: z.string(),
  merchant: z.string().meta({ description: "the URL's normalised host, the name the allowlist and the ledger use" }),
  allowed: z.boolean().meta({ description: "whether the agent's on-chain allowlist admits the merchant" }),
  allowlistEntry: z.string().nullable().meta({ description: "the allowlist entry that admits it (exact host, *.domain or *)" }),
  payee: z
    .string()
    .nullable()
    .meta({ description: "the payee the owner pinned for that entry (null: any); a quote naming another is refused payee_not_allowed" }),
  policyDeployed: z.boolean(),
  paused: z.boolean(),
  quote: QuoteView.nullable().meta({
    description:
      "the seller's x402 quote (nothing was paid); null when it could not be read, or was not asked because pay would refuse the merchant anyway",
  }),
  quoteError: z.object({ error: z.string(), message: z.string() }).nullable().meta({
    description:
      "why there is no quote: seller unreachable, no 402, no exact USDC offer on this chain, or not asked (merchant_not_allowed, no_policy: the seller is not contacted)",
  }),
  newMerchant: z.boolean().meta({ description: "true when this agent has no approved payment to this merchant yet" }),
  approvedPayments: z.number().int().meta({ description: "approved payments of this agent to this merchant" }),
  expectedOutcome: z
    .enum(["approved", "pending", "blocked", "unknown"])
    .meta({ description: "what pay would answer for the quoted price now, from the policy contract's own check" }),
  reason: z.string().nullable().meta({ description: "the block reason when expectedOutcome is blocked" }),
  advice: z.string(),
});
export type VerifyMerchantResult = z.infer<typeof VerifyMerchantResult>;

export const LimitsOutput = rootOf(PolicyView);
export const BalanceOutput = rootOf(BalanceResponse);
export const PayOutput = rootOf(PayResult);
export const TransactionsOutput = rootOf(LedgerResponse);
export const PaymentOutput = rootOf(LedgerEntry);
