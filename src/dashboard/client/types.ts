/** Shapes of the API answers the pages read (see src/schemas). */
export interface AgentSummary {
  address: string;
  /** The network it lives on: its owner signs for that chain (chainId). */
  network: string;
  chainId: number;
  label: string;
  createdAt: string;
  ownerAddress: string | null;
  policyContract: string;
  deployed: boolean;
}

export interface PolicyView {
  address: string;
  perTxLimit: string;
  dailyBudget: string;
  allowlist: string[];
  approvalThreshold: string;
  policyContract: string;
  deployed: boolean;
  paused: boolean;
  ownerAddress: string | null;
  allowlistRoot: string;
  spentToday: string;
  remainingDailyBudget: string;
  /** USDC held in open batch-settlement channels beyond what their vouchers charged (refundable, not spent). */
  heldInChannels?: string;
  lastUpdated: number | null;
  hourlyBudget?: string;
  weeklyBudget?: string;
  monthlyBudget?: string;
  lifetimeBudget?: string;
  maxPaymentsPerHour?: number;
  validUntil?: number;
  maxSwapSlippageBps?: number;
  swapTwapSeconds?: number;
  merchantCaps?: Record<string, string>;
  /** The only address each pinned entry may pay (entries absent: any payee). */
  payees?: Record<string, string>;
  /** Entries whose sellers must sign their offers (a rule the service keeps). */
  requireSignedOffer?: string[];
  /** The lowest swap price, USDC per 1 WETH ("0" = no floor). */
  minSwapRate?: string;
  /** The authorisation epoch a resume signs (SetPaused.epoch). */
  epoch?: number;
  /** Funds sit at the address before its policy is deployed. */
  warning?: string;
  merchantRemainingToday?: Record<string, string>;
  windows?: { window: string; budget: string; spent: string; remaining: string; resetsAt: number | null }[];
  velocity?: { maxPaymentsPerHour: number; paymentsThisHour: number; remaining: number | null; resetsAt: number };
}

export interface Balance {
  agentAddress: string;
  usdc: string;
  eth: string;
  dailyBudget: string;
  spentToday: string;
  remainingDailyBudget: string;
  policyContract: string;
  deployed: boolean;
  paused: boolean;
}

export interface ApprovalItem {
  id: string;
  agentAddress: string;
  merchant: string;
  serviceUrl: string;
  amount: string;
  /** The address the seller asked to be paid at: what ApprovalDecision.payTo signs (null: none named). */
  payTo: string | null;
  intent: string;
  status: string;
  requestedAt: string;
  resolvedAt: string | null;
  expiresAt: string;
}

export interface LedgerItem {
  id: string;
  agentAddress: string;
  network: string;
  chainId: number;
  merchant: string;
  amount: string;
  /** "maxAmount": a refusal before any price was known, `amount` is the agent's ceiling; else the seller's price. */
  amountIs?: "price" | "maxAmount";
  currency: string;
  intent: string;
  status: string;
  txHash: string | null;
  createdAt: string;
  reason: string | null;
  approvalId: string | null;
  paymentId: string | null;
  serviceUrl: string;
  settledAt: string | null;
  explorerUrl: string | null;
  onchain: { confirmed: boolean; blockNumber: number | null };
  /** The swap that bought this payment's missing USDC before it was paid (amounts in token units). */
  swap?: { txHash: string; tokenIn: "WETH" | "ETH"; amountIn: string; amountOut: string } | null;
  /** The x402 scheme paid (older entries: absent, exact). */
  scheme?: "exact" | "upto" | "batch-settlement";
  /** upto: the ceiling signed; `amount` is what the seller settled. */
  ceiling?: string | null;
  /** batch-settlement: the voucher's cumulative in its channel, and the deposit this payment made first (if any). */
  channel?: { channelId: string; cumulative: string; deposit: string | null; depositPaymentId: string | null } | null;
}

export interface LedgerPage {
  transactions: LedgerItem[];
  total: number;
  limit: number;
  offset: number;
}

/** A batch-settlement channel (GET /agents/:address/channels); amounts in USDC. */
export interface ChannelView {
  channelId: string;
  merchant: string;
  serviceUrl: string;
  receiver: string;
  status: "open" | "closed";
  deposited: string;
  balance: string;
  /** What the seller's vouchers charged: money spent. */
  charged: string;
  /** Claimed on-chain by the seller (null: the chain did not answer). */
  claimed: string | null;
  /** Held, not spent: refundable by closing the channel. */
  held: string;
  credited: string;
  deposits: { paymentId: string; transactionId: string; amount: string; credited: string | null }[];
  /** Cooperative refunds the seller made to the wallet. */
  refunds: { amount: string; txHash: string | null; at: string }[];
  updatedAt: string;
}

/** POST /agents/:address/channels/:channelId/close: the channel as left, with what came back now. */
export interface ClosedChannel extends ChannelView {
  refunded: string;
  creditedNow: string;
}

export interface SetLimitsResult {
  status: "deployed";
  policyContract: string;
  txHash: string | null;
  agentAddress: string;
  perTxLimit: string;
  dailyBudget: string;
  allowlist: string[];
  approvalThreshold: string;
  allowlistRoot: string;
  timestamp: number;
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: "active" | "disabled";
  createdAt: string;
  disabledAt: string | null;
}

export interface WebhookDelivery {
  id: string;
  eventId: string;
  type: string;
  status: "pending" | "delivered" | "failed" | "cancelled";
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  lastHttpStatus: number | null;
  lastError: string | null;
  log: { attempt: number; at: string; httpStatus: number | null; error: string | null; latencyMs: number | null }[];
}

export interface WebhookDeliveriesPage {
  deliveries: WebhookDelivery[];
  total: number;
  limit: number;
  offset: number;
}
