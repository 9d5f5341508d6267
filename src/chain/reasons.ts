/**
 * The contract's enums (ISpendPolicy.sol, DESIGN.md section 4) and the one table of refusal reasons: the bindings
 * decode with it, the services answer with it, the ledger and the indexer record it, the API reference prints it.
 */

/** ISpendPolicy.Decision: what checkPayment answers. */
export const Decision = { Allow: 0, RequiresApproval: 1, Block: 2 } as const;
export type Decision = (typeof Decision)[keyof typeof Decision];

/** ISpendPolicy.BlockReason: PaymentBlocked.reason and checkPayment's reason (None: allowed). */
export const BlockReason = {
  None: 0,
  MerchantNotAllowed: 1,
  PerTxLimitExceeded: 2,
  DailyBudgetExceeded: 3,
  PolicyPaused: 4,
  ApprovalRequired: 5,
  VelocityExceeded: 6,
  PolicyExpired: 7,
  HourlyBudgetExceeded: 8,
  WeeklyBudgetExceeded: 9,
  MonthlyBudgetExceeded: 10,
  LifetimeBudgetExceeded: 11,
  MerchantBudgetExceeded: 12,
  SwapSlippageExceeded: 13,
  PayeeNotAllowed: 14,
} as const;
export type BlockReason = (typeof BlockReason)[keyof typeof BlockReason];

/**
 * SpendPolicy.paymentState: Authorized while authorised and not released; Void once voided (voidUnrecordedPayment: it
 * can never be authorised); None for an unknown or released payment.
 */
export const PaymentState = { None: 0, Authorized: 1, Void: 2 } as const;
export type PaymentState = (typeof PaymentState)[keyof typeof PaymentState];

/** The enum member a contract answered with; throws on a value the ABI's enum does not have. */
function memberOf<T extends number>(values: Readonly<Record<string, T>>, what: string, code: bigint | number): T {
  const member = Object.values(values).find((v) => v === Number(code));
  if (member === undefined) throw new Error(`the contract answered ${what} ${code}, which this service does not know`);
  return member;
}

export const decisionOf = (code: bigint | number): Decision => memberOf(Decision, "Decision", code);
export const paymentStateOf = (code: bigint | number): PaymentState => memberOf(PaymentState, "paymentState", code);

interface ReasonRow {
  /** The BlockReason code on-chain; null for the service's own refusals, which are not recorded on-chain. */
  code: BlockReason | null;
  name: string;
  /** For the API reference. */
  meaning: string;
  /** For the agent that was refused. */
  message: string;
}

/** Every reason a payment is refused for (422 `{ status: "blocked", reason }`): on-chain codes 1-13, then the service's. */
export const REASON_TABLE = [
  {
    code: BlockReason.MerchantNotAllowed,
    name: "merchant_not_allowed",
    meaning: "the merchant's host is not on the allowlist (checked before the seller is contacted)",
    message: "The merchant is not on the agent's allowlist.",
  },
  {
    code: BlockReason.PerTxLimitExceeded,
    name: "per_tx_limit_exceeded",
    meaning: "the price is above perTxLimit",
    message: "The price is above the per-payment limit.",
  },
  {
    code: BlockReason.DailyBudgetExceeded,
    name: "daily_budget_exceeded",
    meaning: "the payment would take today's spend (UTC day) above dailyBudget",
    message: "The payment would exceed today's budget.",
  },
  {
    code: BlockReason.PolicyPaused,
    name: "policy_paused",
    meaning: "the owner paused the agent (kill switch)",
    message: "The owner has paused this agent's payments.",
  },
  {
    code: BlockReason.ApprovalRequired,
    name: "approval_required",
    meaning: "above approvalThreshold without a valid owner approval",
    message: "The payment needs a valid owner approval.",
  },
  {
    code: BlockReason.VelocityExceeded,
    name: "velocity_exceeded",
    meaning: "the agent already made maxPaymentsPerHour payments this UTC hour",
    message: "The agent has made as many payments this hour as its policy allows.",
  },
  {
    code: BlockReason.PolicyExpired,
    name: "policy_expired",
    meaning: "the policy's validUntil has passed; every payment is blocked until the owner signs a new policy",
    message: "The agent's policy has expired; the owner must sign a new one.",
  },
  {
    code: BlockReason.HourlyBudgetExceeded,
    name: "hourly_budget_exceeded",
    meaning: "the payment would take this UTC hour's spend above hourlyBudget",
    message: "The payment would exceed this hour's budget.",
  },
  {
    code: BlockReason.WeeklyBudgetExceeded,
    name: "weekly_budget_exceeded",
    meaning: "the payment would take this 7-day window's spend (weeks from Thursday 00:00 UTC) above weeklyBudget",
    message: "The payment would exceed this week's budget.",
  },
  {
    code: BlockReason.MonthlyBudgetExceeded,
    name: "monthly_budget_exceeded",
    meaning: "the payment would take this 30-day window's spend above monthlyBudget",
    message: "The payment would exceed this 30-day budget.",
  },
  {
    code: BlockReason.LifetimeBudgetExceeded,
    name: "lifetime_budget_exceeded",
    meaning: "the payment would take the total authorised while a lifetime budget was set above lifetimeBudget",
    message: "The payment would exceed the agent's lifetime budget.",
  },
  {
    code: BlockReason.MerchantBudgetExceeded,
    name: "merchant_budget_exceeded",
    meaning: "the payment would take today's spend under the allowlist entry that admits the merchant above that entry's daily cap",
    message: "The payment would exceed this merchant's daily cap.",
  },
  {
    code: BlockReason.SwapSlippageExceeded,
    name: "swap_slippage_exceeded",
    meaning:
      "the swap that was to buy the USDC shortfall would have paid more than the pool's TWAP price plus maxSwapSlippageBps (refused by the router on-chain, the payment then released)",
    message: "Buying the missing USDC would cost more than the owner's swap slippage bound allows.",
  },
  {
    code: BlockReason.PayeeNotAllowed,
    name: "payee_not_allowed",
    meaning:
      "the allowlist entry that admits the merchant names the only address it may pay (its payee), and the seller asks to be paid at another (the seller changed its payTo, or someone tried to pay itself)",
    message:
      "The seller asks to be paid at an address the owner did not name for this merchant; nothing was paid. The owner pins the new payee in the policy if it is genuine.",
  },
  {
    code: null,
    name: "max_amount_exceeded",
    meaning: "the seller's price is above the caller's maxAmount (the caller's own ceiling; not recorded on-chain)",
    message: "The seller's price is above the maxAmount you allowed.",
  },
  {
    code: null,
    name: "unsupported_payment",
    meaning:
      "the seller offers no USDC payment this agent can make on its own network (another network, another token, another scheme; not recorded on-chain)",
    message: "The seller offers no USDC payment this agent can make on its network.",
  },
  {
    code: null,
    name: "signed_offer_required",
    meaning:
      "the allowlist entry that admits the merchant requires signed offers (the owner's requireSignedOffer), and the seller's 402 carries no offer whose signature verifies (a rule the service keeps: a contract cannot check a seller's signature; not recorded on-chain; nothing signed)",
    message:
      "The owner requires this merchant to sign its offers (x402 offer-receipt), and it sent none that verifies; nothing was signed or paid.",
  },
  {
    code: null,
    name: "insufficient_funds",
    meaning:
      "the agent wallet holds less USDC than the price, and no swap can buy the rest: the owner's policy allows none, this deployment has none, or its WETH and ETH are not enough (not recorded on-chain; nothing sent)",
    message:
      "The agent wallet holds too little USDC for this price, and nothing can buy the rest: swaps are off, or its WETH and ETH are not enough.",
  },
] as const satisfies readonly ReasonRow[];

/** A refusal reason's name: one of the table's. */
export type ReasonName = (typeof REASON_TABLE)[number]["name"];
/** The reasons the contract records (PaymentBlocked). */
export type OnchainReasonName = Extract<(typeof REASON_TABLE)[number], { code: number }>["name"];

const BY_CODE = new Map<number, OnchainReasonName>(REASON_TABLE.flatMap((r) => (r.code === null ? [] : [[r.code, r.name] as const])));
const BY_NAME = new Map<string, ReasonRow>(REASON_TABLE.map((r) => [r.name, r]));

/** The reason name of an on-chain BlockReason code; null for None (0) and for a code this service does not know. */
export function onchainReason(code: bigint | number): OnchainReasonName | null {
  return BY_CODE.get(Number(code)) ?? null;
}

/** The reason name of an on-chain BlockReason code as recorded; `reason_<code>` for a code this service does not know yet. */
export function reasonName(code: bigint | number): string {
  return onchainReason(code) ?? `reason_${code}`;
}

/** The table's row of a reason name, if it is one. */
export function reasonRow(name: string): ReasonRow | undefined {
  return BY_NAME.get(name);
}
