/** Wallet genesis, agent linking, owner sign-in. */
import { z } from "zod";
import { Address, Signature, UnixTimestamp } from "./common";

export const GenesisRequest = z
  .strictObject({
    email: z.email().max(254).optional(),
    label: z.string().trim().min(1).max(100).optional(),
    network: z
      .string()
      .regex(/^[a-z0-9-]{1,40}$/, "must be a network name like base-sepolia")
      .optional()
      .meta({
        description:
          "the network the agent lives on for good, one this service runs (GET /health lists them; default the first): its wallet, policy and payments are there",
        example: "base-sepolia",
      }),
  })
  .meta({ id: "GenesisRequest" });
export type GenesisRequest = z.infer<typeof GenesisRequest>;

export const GenesisResponse = z
  .object({
    agentAddress: z.string(),
    network: z.string().meta({ description: "the network the agent lives on (a name of the network table)" }),
    chainId: z.number().int().meta({ description: "its chain id: the chainId of every EIP-712 domain its owner signs" }),
    apiKey: z.string().meta({ description: "shown once; store it in ~/.spendgate/config.json" }),
    label: z.string(),
    createdAt: z.string(),
    message: z.string(),
    ownerAddress: z.string().nullable(),
    activationUrl: z
      .string()
      .meta({ description: "the owner's activation link: {dashboard}/onboarding?agent=<address>&code=<activation code>" }),
    activationCode: z.string().meta({ description: "the `code` of the activation link alone (POST /agents/link's activationCode)" }),
  })
  .meta({ id: "GenesisResponse" });

export const ActivationCode = z
  .string()
  .regex(/^[A-Za-z0-9_-]{16,64}$/, "must be the code from the agent's activation link")
  .meta({ description: "the `code` of the agent's activation link: proves the owner got the link from the agent" });

export const ActivationResponse = z
  .object({
    agentAddress: z.string(),
    linked: z.boolean(),
    activationUrl: z.string(),
    activationCode: z.string().meta({ description: "the `code` of the activation link alone (POST /agents/link's activationCode)" }),
  })
  .meta({ id: "ActivationResponse" });

export const LinkRequest = z
  .strictObject({
    agentAddress: Address,
    ownerAddress: Address,
    humanSignature: Signature.optional().meta({ description: "the owner's EIP-712 LinkAgent signature (service domain)" }),
    ownerSignature: Signature.optional().meta({ description: "the same signature under its former name (one of the two is required)" }),
    timestamp: UnixTimestamp,
    activationCode: ActivationCode.optional(),
  })
  .refine((b) => (b.humanSignature ?? b.ownerSignature) !== undefined, { message: "humanSignature is required", path: ["humanSignature"] })
  .refine((b) => !b.humanSignature || !b.ownerSignature || b.humanSignature === b.ownerSignature, {
    message: "humanSignature and ownerSignature differ: send one",
    path: ["ownerSignature"],
  })
  .meta({ id: "LinkRequest" });
export type LinkRequest = z.infer<typeof LinkRequest>;

export const LinkResponse = z.object({ agentAddress: z.string(), ownerAddress: z.string() }).meta({ id: "LinkResponse" });

export const SiweNonceRequest = z.strictObject({ address: Address }).meta({ id: "SiweNonceRequest" });
export const SiweNonceResponse = z.object({ nonce: z.string() }).meta({ id: "SiweNonceResponse" });

export const SiweVerifyRequest = z
  .strictObject({ message: z.string().min(1).max(4_096), signature: Signature })
  .meta({ id: "SiweVerifyRequest" });
export type SiweVerifyRequest = z.infer<typeof SiweVerifyRequest>;
export const SiweVerifyResponse = z
  .object({ apiKey: z.string(), ownerAddress: z.string(), expiresAt: z.string() })
  .meta({ id: "SiweVerifyResponse" });

export const AddressQuery = z.strictObject({ address: Address });
export const OptionalAddressQuery = z.strictObject({ address: Address.optional() });

export const AgentSummary = z.object({
  address: z.string(),
  network: z.string().meta({ description: "the network the agent lives on (chosen at genesis)" }),
  chainId: z.number().int().meta({ description: "its chain id: the chainId of every EIP-712 domain its owner signs" }),
  label: z.string(),
  createdAt: z.string(),
  ownerAddress: z.string().nullable(),
  policyContract: z.string(),
  deployed: z.boolean(),
});
export const AgentsResponse = z.object({ agents: z.array(AgentSummary) }).meta({ id: "AgentsResponse" });

export const BalanceResponse = z
  .object({
    agentAddress: z.string(),
    network: z.string().meta({ description: "the network the agent lives on" }),
    chainId: z.number().int(),
    blockNumber: z.number().int(),
    usdc: z.string(),
    eth: z.string().meta({ description: "the network's native coin (ETH on Base; CELO, POL or AVAX elsewhere)" }),
    weth: z
      .string()
      .nullable()
      .meta({ description: "WETH of the network (the network table's); null on a network without WETH (swaps off)" }),
    currency: z.literal("USDC"),
    dailyBudget: z.string(),
    spentToday: z.string(),
    remainingDailyBudget: z.string(),
    policyContract: z.string(),
    deployed: z.boolean(),
    paused: z.boolean(),
  })
  .meta({ id: "BalanceResponse" });
