/**
 * The EIP-712 types owners sign. One definition serves the contracts' tests, the service's
 * verification, the dashboard and the README, so wallets, server and contracts agree byte for byte.
 */
import type { TypedDataDomain, TypedDataField } from "ethers";

export const DOMAIN_NAME = "SpendGate";
export const DOMAIN_VERSION = "1";

export const SET_POLICY_TYPES: Record<string, TypedDataField[]> = {
  SetPolicy: [
    { name: "agent", type: "address" },
    { name: "perTxLimit", type: "uint256" },
    { name: "dailyBudget", type: "uint256" },
    { name: "allowlistRoot", type: "bytes32" },
    { name: "approvalThreshold", type: "uint256" },
    { name: "hourlyBudget", type: "uint256" },
    { name: "weeklyBudget", type: "uint256" },
    { name: "monthlyBudget", type: "uint256" },
    { name: "lifetimeBudget", type: "uint256" },
    { name: "maxPaymentsPerHour", type: "uint256" },
    { name: "validUntil", type: "uint256" },
    { name: "maxSwapSlippageBps", type: "uint256" },
    { name: "swapTwapSeconds", type: "uint256" },
    { name: "minSwapRate", type: "uint256" },
    { name: "timestamp", type: "uint256" },
  ],
};

export const SET_PAUSED_TYPES: Record<string, TypedDataField[]> = {
  SetPaused: [
    { name: "agent", type: "address" },
    { name: "paused", type: "bool" },
    { name: "epoch", type: "uint256" },
    { name: "timestamp", type: "uint256" },
  ],
};

export const SET_OPERATOR_TYPES: Record<string, TypedDataField[]> = {
  SetOperator: [
    { name: "agent", type: "address" },
    { name: "operator", type: "address" },
    { name: "timestamp", type: "uint256" },
  ],
};

export const APPROVAL_DECISION_TYPES: Record<string, TypedDataField[]> = {
  ApprovalDecision: [
    { name: "action", type: "string" },
    { name: "approvalId", type: "string" },
    { name: "agent", type: "address" },
    { name: "merchant", type: "string" },
    { name: "payTo", type: "address" },
    { name: "amount", type: "uint256" },
    { name: "timestamp", type: "uint256" },
  ],
};

export const SET_OWNER_TYPES: Record<string, TypedDataField[]> = {
  SetOwner: [
    { name: "agent", type: "address" },
    { name: "newOwner", type: "address" },
    { name: "timestamp", type: "uint256" },
  ],
};

export const WITHDRAW_TYPES: Record<string, TypedDataField[]> = {
  Withdraw: [
    { name: "agent", type: "address" },
    { name: "token", type: "address" },
    { name: "to", type: "address" },
    { name: "amount", type: "uint256" },
    { name: "timestamp", type: "uint256" },
  ],
};

/** USDC's EIP-3009 transfer (FiatToken v2.2): the one thing an agent wallet signs, once its policy authorised it. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES: Record<string, TypedDataField[]> = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};

/**
 * The agent wallet's ERC-1271 signature (97 bytes): the paymentId (the EIP-3009 nonce) then the agent signing key's
 * 65-byte ECDSA signature of the transfer's digest. The wallet finds the payment's record by the paymentId.
 */
export function walletSignature(paymentId: string, ecdsaSignature: string): string {
  const id = paymentId.toLowerCase().replace(/^0x/, "");
  const sig = ecdsaSignature.toLowerCase().replace(/^0x/, "");
  if (id.length !== 64 || sig.length !== 130) throw new Error("walletSignature: a 32-byte paymentId and a 65-byte signature");
  return `0x${id}${sig}`;
}

export const LINK_AGENT_TYPES: Record<string, TypedDataField[]> = {
  LinkAgent: [
    { name: "agent", type: "address" },
    { name: "owner", type: "address" },
    { name: "timestamp", type: "uint256" },
  ],
};

/** Domain of what the agent's SpendPolicy contract checks (verifyingContract = the policy's address). */
export function policyDomain(chainId: bigint | number, policyAddress: string): TypedDataDomain {
  return { name: DOMAIN_NAME, version: DOMAIN_VERSION, chainId, verifyingContract: policyAddress };
}

/** Domain of what only the server checks (no contract). */
export function serviceDomain(chainId: bigint | number): TypedDataDomain {
  return { name: DOMAIN_NAME, version: DOMAIN_VERSION, chainId };
}

/** The policy's fields as the contract's Policy tuple holds them (SetPolicy without agent and timestamp). */
export interface PolicyFields {
  perTxLimit: bigint;
  dailyBudget: bigint;
  allowlistRoot: string;
  approvalThreshold: bigint;
  hourlyBudget: bigint;
  weeklyBudget: bigint;
  monthlyBudget: bigint;
  lifetimeBudget: bigint;
  maxPaymentsPerHour: bigint;
  validUntil: bigint;
  maxSwapSlippageBps: bigint;
  swapTwapSeconds: bigint;
  minSwapRate: bigint;
}

/** The optional fields of a policy, all "no such limit": what a policy that names none of them means. */
export const NO_EXTRA_LIMITS = {
  hourlyBudget: 0n,
  weeklyBudget: 0n,
  monthlyBudget: 0n,
  lifetimeBudget: 0n,
  maxPaymentsPerHour: 0n,
  validUntil: 0n,
  maxSwapSlippageBps: 0n,
  swapTwapSeconds: 0n,
  minSwapRate: 0n,
} as const;
