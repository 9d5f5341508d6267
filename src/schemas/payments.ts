/** Payments, approvals and the ledger. */
import { z } from "zod";
import { parseUnits } from "ethers";
import { MAX_JSON_DEPTH, jsonDepth } from "../util/bounded";
import { Address, type ErrorBody, PaymentAmount, Signature, UnixTimestamp } from "./common";

/** The x402 schemes SpendGate pays (docs/schemes.md). */
export const PAYMENT_SCHEMES = ["batch-settlement", "upto", "exact"] as const;
export type PaymentScheme = (typeof PAYMENT_SCHEMES)[number];

export const PayRequest = z
  .strictObject({
    agentAddress: Address,
    serviceUrl: z
      .url({ protocol: /^https?$/ })
      .max(2_048)
      .meta({ description: "the seller's URL (http or https)", example: "https://api.example.com/data" }),
    maxAmount: PaymentAmount.meta({ description: "the most the caller allows to be paid, in USDC" }),
    intent: z.string().trim().min(1, "must say what the payment is for").max(500),
    method: z.enum(["GET", "POST"]).default("GET").meta({ description: "HTTP method for the seller (default GET)" }),
    body: z
      .unknown()
      .optional()
      .refine((v) => jsonDepth(v, MAX_JSON_DEPTH) <= MAX_JSON_DEPTH, `must be nested at most ${MAX_JSON_DEPTH} levels deep`)
      .meta({ description: "JSON body sent to the seller with POST" }),
    schemes: z
      .array(z.enum(PAYMENT_SCHEMES))
      .min(1)
      .max(PAYMENT_SCHEMES.length)
      .refine((l) => new Set(l).size === l.length, "must not repeat a scheme")
      .optional()
      .meta({
        description:
          "the x402 schemes this payment may use, most preferred first (default batch-settlement, upto, exact): the first the seller offers is paid",
      }),
  })
  .meta({ description: "a payment as the payment's room takes it: its agent named (POST /pay's body is PayBody)" });
export type PayRequest = z.infer<typeof PayRequest>;

/** POST /pay's body: the agent may go unnamed, since an agent key names exactly one (as MCP's `pay` does). */
export const PayBody = PayRequest.extend({
  agentAddress: Address.optional().meta({
    description: "the paying agent; optional: the agent key names it (a key of another agent is refused)",
  }),
}).meta({ id: "PayRequest" });

export const SwapInfo = z
  .object({
    txHash: z.string().meta({ description: "the swapForPayment transaction (SwapExecuted)" }),
    tokenIn: z
      .enum(["WETH", "ETH"])
      .meta({ description: "what the wallet sold: its WETH, or ETH it wrapped for the swap (then WETH too, if it had some)" }),
    amountIn: z.string().meta({ description: "WETH (or ETH) spent, in ETH units (18 decimals)", example: "0.000667" }),
    amountOut: z.string().meta({ description: "USDC bought: exactly the payment's shortfall", example: "2" }),
  })
  .meta({ id: "SwapInfo", description: "the swap that bought the USDC the wallet lacked before paying" });

export const ChannelInfo = z
  .object({
    channelId: z.string().meta({ description: "the batch-settlement channel id (bytes32)" }),
    cumulative: z.string().meta({ description: "what the channel's vouchers have charged in all, in USDC" }),
    deposited: z.string().meta({ description: "what the wallet has deposited into the channel, in USDC" }),
    depositTxHash: z.string().nullable().meta({ description: "the deposit this payment made (opening or topping up), if any" }),
  })
  .meta({ id: "ChannelInfo", description: "a batch-settlement channel as a voucher payment left it" });

export const PayResult = z
  .object({
    status: z.enum(["approved", "pending", "blocked"]).meta({ description: "approved (200), pending (202) or blocked (422)" }),
    amount: z.string().meta({ description: "the seller's price in USDC" }),
    merchant: z.string().meta({ description: "host of the service URL" }),
    txHash: z
      .string()
      .nullable()
      .optional()
      .meta({ description: "approved: the settlement transaction; blocked: the PaymentBlocked transaction" }),
    currency: z.literal("USDC").optional(),
    remainingDailyBudget: z.string().optional().meta({ description: "approved: what is left of today's budget" }),
    settledAt: z.string().optional().meta({ description: "approved: ISO 8601" }),
    approvalId: z.string().optional().meta({ description: "pending: apr_<id>, what the owner approves or denies" }),
    intent: z.string().optional(),
    message: z.string().optional().meta({ description: "pending and blocked: what to do next" }),
    reason: z.string().optional().meta({ description: "blocked: the block reason, e.g. daily_budget_exceeded" }),
    onchainEvent: z.string().nullable().optional().meta({ description: "blocked: PaymentBlocked when recorded on-chain" }),
    transactionId: z.string().optional().meta({ description: "the ledger entry (txn_<id>)" }),
    paymentId: z.string().nullable().optional().meta({ description: "approved: the on-chain paymentId, also the EIP-3009 nonce" }),
    authorizeTxHash: z.string().nullable().optional().meta({ description: "approved: the SpendPolicy authorizePayment transaction" }),
    expiresAt: z.string().optional().meta({ description: "pending: when the approval request expires unless the owner decides" }),
    response: z
      .object({ status: z.number().int(), body: z.unknown() })
      .optional()
      .meta({ description: "approved: the seller's HTTP status and body" }),
    swap: SwapInfo.optional().meta({ description: "approved: the swap that bought the missing USDC before paying, when there was one" }),
    scheme: z.enum(PAYMENT_SCHEMES).optional().meta({ description: "approved: the x402 scheme paid (absent: exact)" }),
    ceiling: z.string().optional().meta({ description: "upto: the ceiling signed, in USDC (amount is what the seller settled)" }),
    channel: ChannelInfo.optional().meta({ description: "batch-settlement: the channel the voucher was paid from" }),
  })
  .meta({ id: "PayResult" });

const SellerResponse = z.object({ status: z.number().int(), body: z.unknown() });

/**
 * The three outcomes of a payment, as the services return them: PayResult (the documented wire shape) narrowed per
 * status. The edge maps them to 200 / 202 / 422 (REST) or to tool results (MCP).
 */
export const PayApproved = PayResult.extend({
  status: z.literal("approved"),
  txHash: z.string().nullable(),
  currency: z.literal("USDC"),
  settledAt: z.string(),
  intent: z.string(),
  transactionId: z.string(),
  paymentId: z.string().nullable(),
  authorizeTxHash: z.string().nullable(),
  response: SellerResponse,
});
export const PayPending = PayResult.extend({
  status: z.literal("pending"),
  approvalId: z.string(),
  intent: z.string(),
  transactionId: z.string(),
  expiresAt: z.string(),
  message: z.string(),
});
/** The one blocked shape, wherever the refusal was decided (policy, contract, swap bound, funds). */
export const PayBlocked = PayResult.extend({
  status: z.literal("blocked"),
  reason: z.string(),
  onchainEvent: z.literal("PaymentBlocked").nullable(),
  txHash: z.string().nullable(),
  intent: z.string(),
  transactionId: z.string(),
  message: z.string(),
  payTo: z.string().optional().meta({ description: "payee_not_allowed: the address the seller asked to be paid at" }),
  pinnedPayee: z.string().optional().meta({ description: "payee_not_allowed: the payee the owner named for this merchant" }),
});
export type PayApproved = z.infer<typeof PayApproved>;
export type PayPending = z.infer<typeof PayPending>;
export type PayBlocked = z.infer<typeof PayBlocked>;
export type PayOutcome = PayApproved | PayPending | PayBlocked;
/** What a payment request answers, and what its Idempotency-Key keeps: an outcome, or an error in the interface's shape. */
export type PayAnswer = { outcome: PayOutcome } | { error: ErrorBody; headers?: Record<string, string> };

export const ApprovalDecisionRequest = z
  .strictObject({
    humanSignature: Signature.meta({ description: "the owner's EIP-712 ApprovalDecision signature" }),
    timestamp: UnixTimestamp,
  })
  .meta({ id: "ApprovalDecisionRequest" });
export type ApprovalDecisionRequest = z.infer<typeof ApprovalDecisionRequest>;

export const ApproveResponse = z
  .object({
    id: z.string(),
    status: z.literal("approved"),
    txHash: z.string().nullable().meta({ description: "the settlement transaction" }),
    amount: z.string(),
    merchant: z.string(),
    settledAt: z.string(),
    transactionId: z.string(),
    response: z.object({ status: z.number().int(), body: z.unknown() }).meta({ description: "the seller's HTTP status and body" }),
    swap: SwapInfo.optional().meta({ description: "the swap that bought the missing USDC before paying, when there was one" }),
  })
  .meta({ id: "ApproveResponse" });

export const DenyResponse = z
  .object({ id: z.string(), status: z.literal("denied"), merchant: z.string(), amount: z.string(), deniedAt: z.string() })
  .meta({ id: "DenyResponse" });

export const ApprovalIdParam = z.string().regex(/^apr_[0-9a-f]{24}$/, "must be an approval id like apr_<24 hex>");

export const ApprovalView = z
  .object({
    id: z.string(),
    agentAddress: z.string(),
    merchant: z.string(),
    serviceUrl: z.string(),
    amount: z.string(),
    payTo: z
      .string()
      .nullable()
      .meta({ description: "the address the seller asks to be paid at: ApprovalDecision.payTo, what the owner signs" }),
    intent: z.string(),
    status: z.string(),
    requestedAt: z.string(),
    resolvedAt: z.string().nullable(),
    expiresAt: z.string(),
  })
  .meta({ id: "Approval" });
export const ApprovalsResponse = z.object({ approvals: z.array(ApprovalView) }).meta({ id: "ApprovalsResponse" });

export const LedgerStatusFilter = z.enum(["approved", "blocked", "pending", "denied", "failed", "expired", "processing"]);

export const LedgerQuery = z.strictObject({
  address: Address.optional(),
  status: LedgerStatusFilter.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const LedgerEntry = z
  .object({
    id: z.string(),
    agentAddress: z.string(),
    network: z.string().meta({ description: "the agent's network: the chain the payment was made on" }),
    chainId: z.number().int().meta({ description: "its chain id (0 for a network this service no longer runs)" }),
    merchant: z.string(),
    amount: z.string(),
    amountIs: z.enum(["price", "maxAmount"]).meta({
      description:
        "what amount is: the seller's price (quoted, or what was settled), or the caller's maxAmount for a refusal before any price was known (merchant_not_allowed, unsupported_payment)",
    }),
    currency: z.literal("USDC"),
    intent: z.string(),
    status: z.string(),
    txHash: z.string().nullable(),
    createdAt: z.string(),
    reason: z.string().nullable(),
    approvalId: z.string().nullable(),
    paymentId: z.string().nullable(),
    payTo: z.string().nullable().meta({ description: "the address the authorised EIP-3009 transfer pays (PaymentAuthorized.payTo)" }),
    authorizeTxHash: z.string().nullable().meta({ description: "the authorizePayment transaction (PaymentAuthorized or PaymentBlocked)" }),
    releaseTxHash: z.string().nullable().meta({ description: "the releasePayment transaction of a payment that did not settle" }),
    serviceUrl: z.string(),
    settledAt: z.string().nullable(),
    explorerUrl: z.string().nullable(),
    onchain: z.object({ confirmed: z.boolean(), blockNumber: z.number().int().nullable() }),
    swap: SwapInfo.nullable().meta({ description: "the swap that bought this payment's missing USDC (SwapExecuted), or null" }),
    receipt: z
      .object({
        signer: z
          .string()
          .nullable()
          .meta({ description: "who signed it: an address (EIP-712) or a key's DID (JWS); null when none was checked" }),
        issuedAt: z.number().int().nullable().meta({ description: "when the seller issued it (Unix seconds)" }),
        verified: z.boolean().meta({
          description:
            "its signature verifies, by the signer of the offer paid, for that offer's resource and network, paid by the agent's wallet, naming no other transaction; false flags the entry (payment.receipt_invalid)",
        }),
        problem: z.string().optional().meta({ description: "why it is not verified (missing, signature, payer, resource, transaction)" }),
      })
      .nullable()
      .meta({
        description:
          "the seller's receipt of a payment made under its signed offer (x402 offer-receipt, docs/receipts.md); null when it signed none",
      }),
    pendingSettlementTx: z.string().optional().meta({
      description:
        "processing: the settlement the seller reported broadcast and not yet confirmed (settlement_pending), checked to carry this payment's transfer; the payment is decided from the chain",
    }),
    scheme: z.enum(PAYMENT_SCHEMES).meta({ description: "the x402 scheme paid (docs/schemes.md)" }),
    ceiling: z
      .string()
      .nullable()
      .meta({ description: "upto: the ceiling signed and authorised, in USDC (amount is what the seller settled); else null" }),
    creditTxHash: z.string().nullable().meta({
      description:
        "upto and batch-settlement: the transaction that credited back what returned (creditCeiling, creditChannel, or a later deposit into the same channel settling it: SchemeCredited); null until then, and for exact",
    }),
    channel: z
      .object({
        channelId: z.string().meta({ description: "the batch-settlement channel id (bytes32)" }),
        cumulative: z.string().meta({ description: "the voucher's cumulative: what the channel's vouchers charged in all with it, USDC" }),
        deposit: z.string().nullable().meta({ description: "the deposit this payment made first (opening or topping up), USDC" }),
        depositPaymentId: z.string().nullable().meta({ description: "that deposit's authorisation (paymentId)" }),
      })
      .nullable()
      .meta({ description: "batch-settlement: the channel the voucher (and deposit, if any) went to; else null" }),
    refusedPayTo: z
      .string()
      .optional()
      .meta({ description: "payee_not_allowed: the address the seller asked to be paid at (the owner pins it if genuine)" }),
    pinnedPayee: z.string().optional().meta({ description: "payee_not_allowed: the payee the owner named for that merchant" }),
  })
  .meta({ id: "LedgerTransaction" });

export const LedgerResponse = z
  .object({ transactions: z.array(LedgerEntry), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: "LedgerResponse" });

export const FaucetToken = z
  .enum(["USDC", "ETH", "WETH"])
  .meta({ description: "what the faucet gives: test USDC (minted), ETH, or WETH at Base's WETH address", example: "USDC" });
/** Per token: decimals and the most the faucet gives at a time (whole units). */
export const FAUCET_TOKENS = {
  USDC: { decimals: 6, max: 1_000_000n },
  ETH: { decimals: 18, max: 1_000n },
  WETH: { decimals: 18, max: 1_000n },
} as const;
const FAUCET_AMOUNT = /^(0|[1-9]\d{0,27})(\.\d{1,18})?$/;
export const FaucetRequest = z
  .strictObject({
    agentAddress: Address,
    network: z
      .string()
      .regex(/^[a-z0-9-]{1,40}$/, "must be a network name like base-sepolia")
      .optional()
      .meta({ description: "the sandbox chain to give on (default: the agent's network)" }),
    token: FaucetToken.default("USDC"),
    amount: z
      .string()
      .trim()
      .regex(FAUCET_AMOUNT, 'must be a decimal string, like "0.5"')
      .meta({ description: "amount in the token's own decimal units (USDC: 6 decimals at most; ETH, WETH: 18)", example: "25" }),
  })
  .superRefine((v, ctx) => {
    // Zod may run this after a field failed: never throw here (a throw would be a 500).
    const spec = FAUCET_TOKENS[v?.token] as { decimals: number; max: bigint } | undefined;
    if (!spec || typeof v.amount !== "string" || !FAUCET_AMOUNT.test(v.amount)) return;
    const { decimals, max } = spec;
    const fraction = v.amount.split(".")[1] ?? "";
    if (fraction.length > decimals) {
      ctx.addIssue({ code: "custom", path: ["amount"], message: `has more than ${decimals} decimals for ${v.token}` });
    } else if (parseUnits(v.amount, decimals) === 0n) {
      ctx.addIssue({ code: "custom", path: ["amount"], message: "must be greater than 0" });
    } else if (parseUnits(v.amount, decimals) > max * 10n ** BigInt(decimals)) {
      ctx.addIssue({ code: "custom", path: ["amount"], message: `is more than the faucet gives at a time (${max} ${v.token})` });
    }
  })
  .meta({ id: "FaucetRequest" });
export type FaucetRequest = z.infer<typeof FaucetRequest>;
export const FaucetResponse = z
  .object({ agentAddress: z.string(), amount: z.string(), currency: FaucetToken, txHash: z.string() })
  .meta({ id: "FaucetResponse" });

export const TransactionId = z
  .string()
  .regex(/^txn_[0-9a-f]{24}$/, "must be a transaction id like txn_<24 hex>")
  .meta({ description: "ledger transaction id (txn_<24 hex>)", example: "txn_0123456789abcdef01234567" });
