/** What the event-only audit (audit.ts) reports: agents, their payments, policies, epochs, leaves, payees, outflows. */
import type { AuditOutflow } from "./auditOutflows";
import type { AuditChannel, AuditScheme } from "./auditSchemes";
import type { AuditSignature } from "./auditSignatures";

/** The numeric fields of PolicyUpdated's policy tuple (the grown SetPolicy: docs/owners.md, "The EIP-712 types owners sign"). */
export const POLICY_NUMBERS = [
  "perTxLimit",
  "dailyBudget",
  "approvalThreshold",
  "hourlyBudget",
  "weeklyBudget",
  "monthlyBudget",
  "lifetimeBudget",
  "maxPaymentsPerHour",
  "validUntil",
  "maxSwapSlippageBps",
  "swapTwapSeconds",
  "minSwapRate",
] as const;

/** Every event that starts a new authorisation epoch, as the audit rebuilds it (ISpendPolicy.sol, owner actions). */
export type EpochCause = "PolicyUpdated" | "PausedSet" | "OperatorSet" | "OwnerSet";

/** The allowlist leaf that admitted a payment (PaymentAuthorized's leafEntry, leafDailyCap, leafPayee). */
export interface AuditLeaf {
  entry: string;
  dailyCap: string;
  /** 0x0: any payee. */
  payee: string;
}

/** An allowlist entry as the owner signed it (PolicyUpdated's merchants). */
export interface AuditMerchant extends AuditLeaf {
  requireSignedOffer: boolean;
}

/** "credited": a deposit or ceiling whose SchemeCredited gave back what came back (see AuditPayment.scheme). */
export type AuditPaymentStatus = "authorized" | "settled" | "released" | "credited" | "blocked";

export interface AuditPayment {
  paymentId: string;
  status: AuditPaymentStatus;
  merchant: string;
  amount: string;
  payTo: string | null;
  /** The EIP-3009 transfer's validity (PaymentAuthorized): it may settle only strictly between the two. */
  validAfter: number | null;
  validBefore: number | null;
  /** The authorisation epoch it was authorised in: it may settle only while the epoch is still that one. */
  epoch: number | null;
  /** The allowlist leaf that admitted it (for a refusal: the leaf the operator presented, if any). */
  leaf: AuditLeaf | null;
  reason: string | null;
  approvalId: string | null;
  day: string;
  authorizeTx: string;
  /** The block of its PaymentAuthorized (or PaymentBlocked). */
  authorizeBlock: number;
  settleTx: string | null;
  releaseTx: string | null;
  /** The swap that bought this payment's USDC shortfall (SwapExecuted): tokenIn is WETH, or 0x0 for wrapped ETH. */
  swap?: { txHash: string; tokenIn: string; amountIn: string; amountOut: string };
  /** A channel deposit or an upto ceiling (SchemePayment): what left under it and what was credited back. */
  scheme?: AuditScheme;
}

export interface AuditAgent {
  agent: string;
  deployTx: string;
  owners: { owner: string; timestamp: number; txHash: string }[];
  operators: { operator: string; timestamp: number; txHash: string }[];
  /** Each signed policy: its version, every SetPolicy field (amounts and integers as decimal strings; the allowlist in
   * clear, as the owner signed it), the root the contract derived from it, when and where. */
  policies: ({
    version: number;
    merchants: AuditMerchant[];
    allowlistRoot: string;
    timestamp: number;
    txHash: string;
  } & Record<(typeof POLICY_NUMBERS)[number], string>)[];
  /** Each pause or resume; `epoch` is the one SetPaused named (for a resume, the epoch it resumed). */
  pauses: { paused: boolean; epoch: number; timestamp: number; txHash: string }[];
  withdrawals: { token: string; to: string; amount: string; timestamp: number; txHash: string }[];
  /** Authorised payments by paymentId, in order. */
  payments: AuditPayment[];
  /** Refusals (a blocked paymentId reserves nothing, so each refusal is its own entry). */
  blocked: AuditPayment[];
  /** Payment ids voided before any authorisation of them landed (PaymentVoided): none can ever be authorised. */
  voided: { paymentId: string; day: string; txHash: string }[];
  /** UTC day (YYYY-MM-DD) -> spend at the end of the day's last event (authorised minus released that day). */
  days: Record<string, string>;
  /** The authorisation epoch rebuilt from events alone: 0 before the first policy, then one more for every
   * PolicyUpdated, every PausedSet pausing and every OperatorSet and OwnerSet after deployment (16 bits, wrapping). */
  epoch: number;
  /** Each epoch started, by what and where. */
  epochs: { epoch: number; cause: EpochCause; txHash: string }[];
  /** Every allowlist leaf that admitted a payment: what it admitted in all, and each UTC day's spend counted against
   * its entry's cap (capped leaves only, as the contract counts: a release does not give it back). */
  leaves: (AuditLeaf & { payments: number; amount: string; days: Record<string, string> })[];
  /** Every payee of an authorised payment: how many, how much, and the entries that named it as their payee (empty:
   * paid only under leaves with payee 0, "any payee"). */
  payees: Record<string, { payments: number; amount: string; namedBy: string[] }>;
  /** The signer of every owner action, recovered from its event's signature. */
  signatures: AuditSignature[];
  /** Every USDC and WETH Transfer out of the wallet, with what explains it. */
  outflows: AuditOutflow[];
  /** The x402 batch-settlement channels it deposited into (only when it did). */
  channels?: AuditChannel[];
}

/** A contract an agent's operator slot named (an OperatorSet): whoever it lets in relays for the agent. */
export interface AuditOperatorSet {
  address: string;
  /** OwnershipTransferred: who adds and removes members. */
  owners: { owner: string; txHash: string }[];
  /** OperatorAdded / OperatorRemoved, in order. */
  changes: { member: string; added: boolean; blockNumber: number; txHash: string }[];
  /** The members after the last change read. */
  members: string[];
}

export interface AuditReport {
  factory: string;
  fromBlock: number;
  toBlock: number;
  agents: Record<string, AuditAgent>;
  /** Every operator an agent had that emitted OperatorSet membership events, by address. */
  operatorSets: Record<string, AuditOperatorSet>;
  /** Every place where the rebuilt state disagrees with what an event reported (empty when consistent): the
   * anomalies. */
  inconsistencies: string[];
  /** What an auditor should know that is no anomaly (a contract owner's signature, a transfer of 0). */
  notes: string[];
  /** How many logs the audit read. */
  events: number;
}

/** An agent before any of its events is read. */
export function newAgent(agent: string, deployTx: string): AuditAgent {
  return {
    agent,
    deployTx,
    owners: [],
    operators: [],
    policies: [],
    pauses: [],
    withdrawals: [],
    payments: [],
    blocked: [],
    voided: [],
    days: {},
    epoch: 0,
    epochs: [],
    leaves: [],
    payees: {},
    signatures: [],
    outflows: [],
  };
}
