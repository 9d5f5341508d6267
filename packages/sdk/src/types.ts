/** The shapes the service answers (docs: GET /openapi.json of a running service). Amounts are decimal USDC strings. */

export type Address = string;
/** A USDC amount: a decimal string such as "0.05" (at most 6 decimals). */
export type Amount = string;

export interface PayRequest {
  /** Default: the client's agentAddress. */
  agentAddress?: Address;
  /** The seller's URL (http or https). */
  serviceUrl: string;
  /** The most the agent allows to be paid, in USDC. */
  maxAmount: Amount;
  /** What the payment is for (shown to the owner, kept in the ledger). */
  intent: string;
  method?: "GET" | "POST";
  /** JSON body sent to the seller with POST. */
  body?: unknown;
}

export interface PayOptions {
  /** Sent as Idempotency-Key: the same key and body answer the first result for 24 h. Default: none. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

interface PayCommon {
  amount: Amount;
  merchant: string;
  intent: string;
  /** The ledger entry, txn_<id>. */
  transactionId: string;
}

export interface PayApproved extends PayCommon {
  status: "approved";
  txHash: string | null;
  currency: "USDC";
  remainingDailyBudget?: Amount;
  settledAt: string;
  paymentId: string | null;
  authorizeTxHash: string | null;
  /** The seller's HTTP status and body. */
  response?: { status: number; body: unknown };
}

export interface PayPending extends PayCommon {
  status: "pending";
  /** apr_<id>: what the owner approves or denies. */
  approvalId: string;
  expiresAt: string;
  message: string;
}

export interface PayBlocked extends PayCommon {
  status: "blocked";
  /** Such as daily_budget_exceeded, merchant_not_allowed, per_tx_limit_exceeded. Never retry a blocked payment. */
  reason: string;
  onchainEvent: "PaymentBlocked" | null;
  txHash: string | null;
  message: string;
}

/** POST /pay's outcomes: 200 approved, 202 pending, 422 blocked. Every other answer is thrown as a SpendGateError. */
export type PayResult = PayApproved | PayPending | PayBlocked;

/** One agent's policy (GET /limits item); fields beyond these are kept as the service sent them. */
export interface AgentLimits {
  address: Address;
  deployed: boolean;
  perTxLimit: Amount;
  dailyBudget: Amount;
  remainingDailyBudget?: Amount;
  approvalThreshold: Amount;
  allowlist: string[];
  policyContract: Address | null;
  paused?: boolean;
  warning?: string;
  [field: string]: unknown;
}

export interface LedgerQuery {
  /** An agent's address (default: the client's agentAddress, when set). */
  address?: Address;
  status?: "approved" | "blocked" | "pending" | "denied" | "failed" | "expired" | "processing";
  limit?: number;
  offset?: number;
}

export interface LedgerEntry {
  id: string;
  agentAddress: Address;
  merchant: string;
  amount: Amount;
  currency: "USDC";
  intent: string;
  status: string;
  txHash: string | null;
  createdAt: string;
  reason: string | null;
  approvalId: string | null;
  serviceUrl: string;
  settledAt: string | null;
  explorerUrl: string | null;
  [field: string]: unknown;
}

export interface LedgerPage {
  transactions: LedgerEntry[];
  total: number;
  limit: number;
  offset: number;
}

export interface Approval {
  id: string;
  agentAddress: Address;
  merchant: string;
  serviceUrl: string;
  amount: Amount;
  intent: string;
  status: string;
  requestedAt: string;
  resolvedAt: string | null;
  expiresAt: string;
  [field: string]: unknown;
}

/** The owner's EIP-712 ApprovalDecision signature (made with the owner's wallet; see docs/owners.md's typed data). */
export interface ApprovalDecision {
  humanSignature: string;
  timestamp: number;
}

export interface Genesis {
  agentAddress: Address;
  apiKey: string;
  label: string;
  createdAt: string;
  message: string;
  activationUrl: string;
  activationCode?: string;
}
