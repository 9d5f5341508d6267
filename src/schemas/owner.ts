/** The owner's powers over an agent's wallet beyond the policy: withdraw its funds and hand ownership over. */
import { z } from "zod";
import { Address, Signature, UnixTimestamp } from "./common";

export const WithdrawRequest = z
  .strictObject({
    token: z
      .union([z.enum(["USDC", "ETH"]), Address])
      .meta({ description: '"USDC", "ETH", or the address of another ERC-20 the wallet holds' }),
    to: Address.meta({ description: "where the funds go" }),
    amount: z
      .string()
      .trim()
      .regex(/^\d{1,30}(\.\d{1,18})?$/, 'must be a decimal string like "1.5" (at most the token\'s decimals)')
      .meta({ description: "in the token's units (USDC 6 decimals, ETH 18, other ERC-20s their decimals())", example: "2.5" }),
    humanSignature: Signature.meta({
      description:
        "the owner's EIP-712 Withdraw {agent, token (0x0 for ETH), to, amount in base units, timestamp} in the agent's policy domain",
    }),
    timestamp: UnixTimestamp,
  })
  .meta({ id: "WithdrawRequest" });
export type WithdrawRequest = z.infer<typeof WithdrawRequest>;

export const WithdrawResponse = z
  .object({
    status: z.literal("withdrawn"),
    agentAddress: z.string(),
    token: z.string().meta({ description: "the token's address (0x0 for ETH)" }),
    to: z.string(),
    amount: z.string().meta({ description: "in the token's units" }),
    txHash: z.string(),
  })
  .meta({ id: "WithdrawResponse" });

export const SetOwnerRequest = z
  .strictObject({
    newOwner: Address.meta({ description: "the new owner (an EOA, an ERC-1271 wallet such as a Safe, or an EIP-7702 account)" }),
    humanSignature: Signature.meta({ description: "the current owner's EIP-712 SetOwner {agent, newOwner, timestamp}" }),
    timestamp: UnixTimestamp,
  })
  .meta({ id: "SetOwnerRequest" });
export type SetOwnerRequest = z.infer<typeof SetOwnerRequest>;

export const SetOwnerResponse = z
  .object({ agentAddress: z.string(), ownerAddress: z.string(), txHash: z.string() })
  .meta({ id: "SetOwnerResponse" });

export const GasUsageResponse = z
  .object({
    ownerAddress: z.string(),
    day: z.string().meta({ description: "the UTC day (YYYY-MM-DD) the figures are for" }),
    gasUsed: z.number().meta({ description: "gas of the transactions the operator relayed for this owner's agents today" }),
    costGwei: z.number().meta({ description: "what they cost the operator (gas used × effective gas price), in gwei" }),
    transactions: z.number().int(),
    allowanceGwei: z
      .number()
      .meta({ description: "OWNER_GAS_ALLOWANCE_GWEI: past it, new operator transactions for these agents answer 429" }),
    remainingGwei: z.number(),
  })
  .meta({ id: "GasUsage" });

export const AgentKeyResponse = z
  .object({
    agentAddress: z.string(),
    apiKey: z
      .string()
      .meta({ description: "the agent's new key (sk_...), shown once; every earlier key of the agent answers 401 from now on" }),
    revoked: z.number().int().meta({ description: "how many keys were revoked" }),
  })
  .meta({ id: "AgentKey" });

export const RevokeOwnerKeysResponse = z
  .object({ ownerAddress: z.string(), revoked: z.number().int().meta({ description: "owner keys revoked, this one included" }) })
  .meta({ id: "RevokedOwnerKeys" });

export const PauseRequest = z
  .strictObject({
    paused: z.boolean(),
    epoch: z.number().int().min(0).max(65_535).optional().meta({
      description:
        "SetPaused's epoch: for a resume, the agent's current epoch (GET /limits `epoch`), so a resume signed before a later pause can never undo it; a pause takes effect whatever it names. Absent = 0",
    }),
    humanSignature: Signature.meta({ description: "the owner's EIP-712 SetPaused signature" }),
    timestamp: UnixTimestamp,
  })
  .meta({ id: "PauseRequest" });
export type PauseRequest = z.infer<typeof PauseRequest>;
