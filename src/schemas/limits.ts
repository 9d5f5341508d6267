/** Spend policy requests and responses. */
import { z } from "zod";
import { Address, Amount, Signature, UnixTimestamp } from "./common";

export const SetLimitsRequest = z
  .strictObject({
    agentAddress: Address,
    perTxLimit: Amount,
    dailyBudget: Amount,
    allowlist: z
      .array(z.string().max(300))
      .max(500)
      .meta({ description: "merchant host names; \"*.example.com\" for any subdomain, \"*\" for any merchant; empty = none" }),
    approvalThreshold: Amount,
    humanSignature: Signature.meta({ description: "the owner's EIP-712 SetPolicy signature (see the API reference)" }),
    timestamp: UnixTimestamp,
  })
  .meta({ id: "SetLimitsRequest" });
export type SetLimitsRequest = z.infer<typeof SetLimitsRequest>;

export const PolicyView = z
  .object({
    address: z.string().meta({ description: "the agent" }),
    perTxLimit: z.string().meta({ description: "most one payment may be, USDC" }),
    dailyBudget: z.string().meta({ description: "most the agent may spend per UTC day, USDC" }),
    allowlist: z.array(z.string()).meta({ description: "merchant hosts allowed (\"*.domain\" any subdomain, \"*\" any)" }),
    approvalThreshold: z.string().meta({ description: "payments above it wait for the owner's approval, USDC" }),
    policyContract: z.string().meta({ description: "the agent's SpendPolicy (predicted address before deployment)" }),
    deployed: z.boolean().meta({ description: "false until the owner sets the first policy" }),
    paused: z.boolean().meta({ description: "the owner's kill switch" }),
    ownerAddress: z.string().nullable(),
    allowlistRoot: z.string().meta({ description: "Merkle root of the allowlist, as stored on-chain" }),
    spentToday: z.string().meta({ description: "spent in the current UTC day, USDC" }),
    remainingDailyBudget: z.string(),
    lastUpdated: z.number().int().nullable().meta({ description: "timestamp of the owner's last SetPolicy" }),
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
  })
  .meta({ id: "SetLimitsResponse" });

export const PauseResponse = z
  .object({ agentAddress: z.string(), paused: z.boolean(), policyContract: z.string(), txHash: z.string() })
  .meta({ id: "PauseResponse" });
