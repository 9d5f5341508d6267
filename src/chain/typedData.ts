/**
 * The EIP-712 types owners sign. One definition serves the contracts' tests, the service's verification, the
 * dashboard, the owner CLI (bundled into the SDK) and the docs (docs/owners.md), so wallets, server and contracts agree
 * byte for byte.
 */
import type { TypedDataDomain, TypedDataField } from "ethers";

export const DOMAIN_NAME = "SpendGate";
export const DOMAIN_VERSION = "1";

/**
 * One allowlist entry in clear, as the owner signs it inside SetPolicy (version 4): her wallet shows each entry, its
 * daily cap and its payee, and the contract derives the allowlist's Merkle root from exactly these.
 */
export const MERCHANT_TYPE: TypedDataField[] = [
  { name: "entry", type: "string" },
  { name: "dailyCap", type: "uint256" },
  { name: "payee", type: "address" },
  { name: "requireSignedOffer", type: "bool" },
];

/** SetPolicy version 4: every policy field, the allowlist in clear (no root: the contract derives it). */
export const SET_POLICY_TYPES: Record<string, TypedDataField[]> = {
  SetPolicy: [
    { name: "agent", type: "address" },
    { name: "perTxLimit", type: "uint256" },
    { name: "dailyBudget", type: "uint256" },
    { name: "merchants", type: "Merchant[]" },
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
  Merchant: MERCHANT_TYPE,
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

/** An allowlist entry as SetPolicy signs it (the contract's Merchant struct). */
export interface MerchantFields {
  entry: string;
  /** USDC base units; 0: no cap of its own. */
  dailyCap: bigint;
  /** Checksummed; the zero address: any payee. */
  payee: string;
  /** The service pays under this entry only sellers that sign their offers (a rule the service keeps). */
  requireSignedOffer: boolean;
}

/** The policy's fields as the contract's Policy tuple stores them (policy()): the allowlist as its root. */
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

/** The policy as the owner signs it (the contract's SignedPolicy: SetPolicy without agent and timestamp). */
export type SignedPolicyFields = Omit<PolicyFields, "allowlistRoot"> & { merchants: MerchantFields[] };

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
