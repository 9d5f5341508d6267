/** Spend policy requests and responses. */
import { z } from "zod";
import { Address, Amount, PolicyAmount, Signature, UnixTimestamp } from "./common";

/** Bounds POST /limits puts on the swap setting (the contract accepts up to 10,000 bps and any window the pool has). */
export const MAX_SWAP_SLIPPAGE_BPS = 1_000;
export const SWAP_TWAP_SECONDS = { min: 60, max: 3_600 } as const;

export const SetLimitsRequest = z
  .strictObject({
    agentAddress: Address,
    perTxLimit: Amount,
    dailyBudget: Amount,
    allowlist: z
      .array(z.string().max(300))
      .max(500)
      .meta({ description: 'merchant host names; "*.example.com" for any subdomain, "*" for any merchant; empty = none' }),
    approvalThreshold: Amount,
    hourlyBudget: PolicyAmount.optional().meta({ description: 'most per UTC hour, USDC; absent or "0" = no hourly budget' }),
    weeklyBudget: PolicyAmount.optional().meta({
      description: 'most per 7-day window (from Thursday 00:00 UTC), USDC; absent or "0" = none',
    }),
    monthlyBudget: PolicyAmount.optional().meta({ description: 'most per 30-day window of the Unix epoch, USDC; absent or "0" = none' }),
    lifetimeBudget: PolicyAmount.optional().meta({
      description: 'most in total (payments authorised while a lifetime budget is set), USDC; absent or "0" = none',
    }),
    maxPaymentsPerHour: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .meta({ description: "most payments per UTC hour; absent or 0 = none" }),
    validUntil: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32 - 1)
      .optional()
      .meta({ description: "Unix time after which every payment is blocked (policy_expired); absent or 0 = never" }),
    maxSwapSlippageBps: z
      .number()
      .int()
      .min(0)
      .max(MAX_SWAP_SLIPPAGE_BPS)
      .optional()
      .meta({
        description: `the most a swap before settlement may pay above the pool's TWAP price and fee, in basis points (at most ${MAX_SWAP_SLIPPAGE_BPS}); absent or 0 = swaps off (the default)`,
        example: 100,
      }),
    swapTwapSeconds: z
      .number()
      .int()
      .min(0)
      .max(SWAP_TWAP_SECONDS.max)
      .optional()
      .meta({
        description: `the TWAP window of that price, seconds: ${SWAP_TWAP_SECONDS.min} to ${SWAP_TWAP_SECONDS.max} when swaps are on`,
        example: 600,
      }),
    payees: z.record(z.string().max(300), Address).optional().meta({
      description:
        'the only address each allowlist entry may pay, e.g. { "api.weather.example": "0x…" } (ask the seller with POST /merchants/quote); each key must be in allowlist; absent = any payee (a stolen server could then pay itself under that entry)',
    }),
    minSwapRate: PolicyAmount.optional().meta({
      description:
        'the lowest price a swap before settlement accepts, USDC per 1 WETH, whatever the pool\'s TWAP says; absent or "0" = no floor',
    }),
    merchantCaps: z.record(z.string().max(300), Amount).optional().meta({
      description:
        'daily cap per allowlist entry, USDC, e.g. { "api.weather.example": "2.00" }; each key must be in allowlist; "0" = no cap of its own',
    }),
    requireSignedOffer: z.array(z.string().max(300)).max(500).optional().meta({
      description:
        "allowlist entries whose sellers must sign their offers (x402 offer-receipt): a seller that sends none is refused before anything is signed. Signed by the owner (Merchant.requireSignedOffer) but kept by the service only: the contract cannot verify a seller's signature",
    }),
    humanSignature: Signature.meta({ description: "the owner's EIP-712 SetPolicy signature (see the API reference)" }),
    timestamp: UnixTimestamp,
  })
  .meta({ id: "SetLimitsRequest" });
export type SetLimitsRequest = z.infer<typeof SetLimitsRequest>;

export const WindowView = z
  .object({
    window: z.enum(["hourly", "daily", "weekly", "monthly", "lifetime"]),
    budget: z.string().meta({ description: "USDC" }),
    spent: z.string().meta({ description: "USDC counted in the current window" }),
    remaining: z.string().meta({ description: "USDC left in the current window" }),
    resetsAt: z.number().int().nullable().meta({ description: "Unix time the window ends (fixed UTC windows); null for lifetime" }),
  })
  .meta({ id: "PolicyWindow" });

export const PolicyView = z
  .object({
    address: z.string().meta({ description: "the agent" }),
    perTxLimit: z.string().meta({ description: "most one payment may be, USDC" }),
    dailyBudget: z.string().meta({ description: "most the agent may spend per UTC day, USDC" }),
    allowlist: z.array(z.string()).meta({ description: 'merchant hosts allowed ("*.domain" any subdomain, "*" any)' }),
    approvalThreshold: z.string().meta({ description: "payments above it wait for the owner's approval, USDC" }),
    policyContract: z.string().meta({ description: "the agent's SpendPolicy (predicted address before deployment)" }),
    deployed: z.boolean().meta({ description: "false until the owner sets the first policy" }),
    paused: z.boolean().meta({ description: "the owner's kill switch" }),
    ownerAddress: z.string().nullable(),
    allowlistRoot: z
      .string()
      .meta({ description: "Merkle root of the allowlist, as the contract derived it from the entries the owner signed" }),
    spentToday: z.string().meta({ description: "spent in the current UTC day, USDC" }),
    remainingDailyBudget: z.string(),
    heldInChannels: z.string().meta({
      description:
        "USDC in the agent's open batch-settlement channels beyond what their vouchers charged: held, not spent (counted in the budgets until refunded and credited back; GET /agents/:address/channels)",
    }),
    lastUpdated: z.number().int().nullable().meta({ description: "timestamp of the owner's last SetPolicy" }),
    hourlyBudget: z.string().meta({ description: 'most per UTC hour, USDC ("0" = none)' }),
    weeklyBudget: z.string().meta({ description: 'most per 7-day window, USDC ("0" = none)' }),
    monthlyBudget: z.string().meta({ description: 'most per 30-day window, USDC ("0" = none)' }),
    lifetimeBudget: z.string().meta({ description: 'most in total, USDC ("0" = none)' }),
    maxPaymentsPerHour: z.number().int().meta({ description: "most payments per UTC hour (0 = none)" }),
    validUntil: z.number().int().meta({ description: "Unix time after which every payment is blocked (0 = never)" }),
    maxSwapSlippageBps: z.number().int(),
    swapTwapSeconds: z.number().int(),
    merchantCaps: z.record(z.string(), z.string()).meta({ description: "daily cap per capped allowlist entry, USDC" }),
    payees: z
      .record(z.string(), z.string())
      .meta({ description: "the payee each pinned allowlist entry may pay (entries absent here: any payee)" }),
    requireSignedOffer: z
      .array(z.string())
      .meta({ description: "entries whose sellers must sign their offers (a rule the service keeps, not the contract)" }),
    minSwapRate: z.string().meta({ description: 'lowest swap price, USDC per 1 WETH ("0" = no floor)' }),
    epoch: z.number().int().meta({ description: "the authorisation epoch a resume signs (SetPaused.epoch)" }),
    warning: z.string().optional().meta({
      description:
        "present when the address holds funds before its policy is deployed (fund an agent only after), or when a wildcard with any payee also admits a pinned entry (which undoes the pin)",
    }),
    merchantRemainingToday: z.record(z.string(), z.string()).meta({ description: "what each capped entry has left today, USDC" }),
    windows: z
      .array(WindowView)
      .meta({ description: "every budget window with a limit (and the day's): budget, spent, remaining, when it resets" }),
    velocity: z
      .object({
        maxPaymentsPerHour: z.number().int(),
        paymentsThisHour: z.number().int(),
        remaining: z.number().int().nullable(),
        resetsAt: z.number().int(),
      })
      .meta({ description: "payments this UTC hour against maxPaymentsPerHour (remaining null: no limit)" }),
  })
  .meta({ id: "Policy" });
export type PolicyView = z.infer<typeof PolicyView>;

export const LimitsResponse = z.object({ agents: z.array(PolicyView) }).meta({ id: "LimitsResponse" });

export const SetLimitsResponse = z
  .object({
    status: z.literal("deployed"),
    policyContract: z.string(),
    txHash: z.string().nullable(),
    agentAddress: z.string(),
    apiKey: z.string().meta({ description: "the caller's key, masked (keys are shown once, at creation)" }),
    perTxLimit: z.string(),
    dailyBudget: z.string(),
    allowlist: z.array(z.string()),
    approvalThreshold: z.string(),
    allowlistRoot: z.string(),
    timestamp: z.number().int(),
    hourlyBudget: z.string(),
    weeklyBudget: z.string(),
    monthlyBudget: z.string(),
    lifetimeBudget: z.string(),
    maxPaymentsPerHour: z.number().int(),
    validUntil: z.number().int(),
    maxSwapSlippageBps: z.number().int(),
    swapTwapSeconds: z.number().int(),
    merchantCaps: z.record(z.string(), z.string()),
    payees: z.record(z.string(), z.string()),
    requireSignedOffer: z.array(z.string()),
    minSwapRate: z.string(),
  })
  .meta({ id: "SetLimitsResponse" });

export const PauseResponse = z
  .object({ agentAddress: z.string(), paused: z.boolean(), policyContract: z.string(), txHash: z.string() })
  .meta({ id: "PauseResponse" });

export const SwapPriceQuery = z.strictObject({
  twapSeconds: z.coerce
    .number()
    .int()
    .min(SWAP_TWAP_SECONDS.min)
    .max(SWAP_TWAP_SECONDS.max)
    .default(600)
    .meta({ description: `the averaging window, ${SWAP_TWAP_SECONDS.min} to ${SWAP_TWAP_SECONDS.max} s (default 600)` }),
});

export const SwapPriceResponse = z
  .object({
    agentAddress: z.string(),
    twapSeconds: z.number().int(),
    pool: z.string().nullable().meta({ description: "the WETH/USDC pool swaps use (null: this deployment has no swaps, or no pool)" }),
    usdcPerWeth: z.string().nullable().meta({
      description:
        "the pool's average price over twapSeconds, USDC per 1 WETH (compare minSwapRate with it); null when the pool has no such history",
    }),
  })
  .meta({ id: "SwapPriceResponse" });
