/** Shapes of the MongoDB documents. `_id` is always an ObjectId; public ids live in their own indexed fields. */
import type { ObjectId } from "mongodb";
import type { PayAnswer } from "../schemas/payments";

export interface OwnerDoc {
  _id?: ObjectId;
  address: string;
  createdAt: Date;
  lastSignInAt: Date;
}

export interface ApiKeyDoc {
  _id?: ObjectId;
  hash: string; // SHA-256 of the key, hex
  prefix: string; // first characters, to tell keys apart in lists and logs
  role: "agent" | "owner";
  agentAddress?: string;
  ownerAddress?: string;
  createdAt: Date;
  expiresAt?: Date;
  revokedAt?: Date;
}

export interface AgentDoc {
  _id?: ObjectId;
  address: string;
  /**
   * The network the agent lives on (a name of the network table), chosen at genesis; absent on agents created before
   * networks were recorded, which live on the service's first network.
   */
  network?: string;
  label: string;
  email: string | null;
  /** sha256 of (creator owner, email, label) when email or label is given: the natural key that makes genesis 409. */
  registrationKey: string | null;
  ownerAddress: string | null;
  /** The agent's wallet and spend policy: one contract, so always equal to `address` (kept for the ledger's shape). */
  policyAddress: string;
  /** The agent's signing key (held by the WalletProvider); the agent address is the factory's CREATE2 clone of it. */
  signerAddress: string;
  /** The address commits to the owner (created with an owner key): only that owner can ever be deployed there. */
  ownerBound?: boolean;
  /**
   * HMAC of (chain, agent, owner) under a secret derived from WALLET_ENCRYPTION_KEY (not in the database), written
   * when the owner is linked: a database write alone cannot re-link an undeployed agent (checked at deployment).
   */
  linkMac?: string;
  createdAt: Date;
  linkedAt: Date | null;
  /**
   * Moves each time the agent's policy changes (a pause or policy update relayed here, a PolicyUpdated, PausedSet,
   * OperatorSet or OwnerSet the indexer saw): the payment path's cached policy is read again (policyChanged).
   */
  policySeq?: number;
}

export interface WalletKeyDoc {
  _id?: ObjectId;
  address: string;
  provider: "local";
  ciphertext: string; // base64
  iv: string; // base64
  tag: string; // base64
  createdAt: Date;
}

export interface PolicyDoc {
  _id?: ObjectId;
  agentAddress: string;
  policyAddress: string;
  perTxLimit: string; // base units
  dailyBudget: string;
  approvalThreshold: string;
  allowlist: string[]; // normalised entries
  allowlistRoot: string;
  /** The SetPolicy fields after the first four (base units or integers, as decimal strings); absent before them. */
  extraLimits?: Record<string, string>;
  /** Daily cap per capped allowlist entry, base units. */
  merchantCaps?: Record<string, string>;
  /** Per-entry payees (addresses) of the allowlist root, by entry. */
  payees?: Record<string, string>;
  /** Entries whose sellers must sign their offers (SetPolicy's Merchant.requireSignedOffer; a rule the service keeps). */
  signedOffers?: string[];
  timestamp: number; // the owner's signed timestamp
  txHash: string;
  deployed: boolean;
  updatedAt: Date;
}

export interface UsedSignatureDoc {
  _id?: ObjectId;
  hash: string;
  kind: string;
  usedAt: Date;
}

export interface SiweNonceDoc {
  _id?: ObjectId;
  nonce: string;
  address: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

/** Content-addressed allowlists: the chain stores only the Merkle root, this maps a root back to its entries. */
export interface AllowlistDoc {
  _id?: ObjectId;
  root: string;
  entries: string[];
  /** Per-entry daily caps in USDC base units (decimal strings), by entry; absent for roots from before caps. */
  caps?: Record<string, string>;
  /** Per-entry payees (addresses), by entry; absent for roots from before payees (every leaf: any payee). */
  payees?: Record<string, string>;
  createdAt: Date;
}

/**
 * A ledger entry (`txn_...`). `status` is what users see; `phase` tracks a payment between authorise and settle so
 * that a restart can finish it. The phases and their moves are src/payments/phases.ts, the one writer of them.
 */
export type LedgerStatus = "approved" | "blocked" | "pending" | "denied" | "failed" | "expired" | "processing";
export type PaymentPhase = "quoted" | "authorizing" | "authorized" | "done";

/** A batch-settlement payment's place in its channel. */
export interface PaymentChannelRef {
  channelId: string;
  /** The voucher's maxClaimableAmount: the channel's cumulative charge with this request (base units). */
  cumulative: string;
  /** The deposit this payment made first (base units), and its authorisation's paymentId; null for a voucher only. */
  deposit: string | null;
  depositPaymentId: string | null;
}

/** A seller's signed offer (x402 offer-receipt, docs/receipts.md), as it sent it, with who signed it. */
export interface PaymentOffer {
  format: "eip712" | "jws";
  /** The EIP-712 signer's address, or the JWS key's DID. */
  signer: string;
  /** The offer as sent (`format`, `signature`, and `payload` for EIP-712): anyone can verify it again. */
  signed: Record<string, unknown>;
}

/** The seller's receipt of a payment made under a signed offer, as checked when it arrived. */
export interface PaymentReceipt {
  verified: boolean;
  signer: string | null;
  /** Unix seconds, as the receipt says. */
  issuedAt: number | null;
  /** Why it is not verified (missing, signature, another payer, resource or transaction); null when verified. */
  problem: string | null;
  /** The receipt as sent, when there was one. */
  signed: Record<string, unknown> | null;
}

/** What every ledger entry has, whatever its phase. */
interface PaymentFields {
  _id?: ObjectId;
  txnId: string;
  agentAddress: string;
  /** The agent's network (absent: written before networks were recorded, the service's first network). */
  network?: string;
  ownerAddress: string | null;
  policyAddress: string;
  merchant: string;
  serviceUrl: string;
  amount: string; // base units
  /** A refusal before any quote: `amount` is the caller's maxAmount, not a price (absent: the seller's price). */
  amountIs?: "maxAmount";
  currency: "USDC";
  intent: string;
  reason: string | null;
  /** The first of identical blocked requests within 60 s, whose on-chain record this one shares. */
  duplicateOf?: string;
  /** Seller or facilitator message for failed payments. */
  detail?: string | null;
  /** payee_not_allowed: the address the seller asked to be paid at, and the payee the owner named. */
  refusedPayTo?: string | null;
  pinnedPayee?: string | null;
  paymentId: string | null; // EIP-3009 nonce, bytes32
  approvalId: string | null;
  /** Settlement tx (approved) or the PaymentBlocked tx (blocked). */
  txHash: string | null;
  authorizeTxHash: string | null;
  /** Block of the authorisation: settlement logs are searched from here. */
  authorizeBlock?: number | null;
  releaseTxHash: string | null;
  /** The voidUnrecordedPayment transaction of a payment recovery failed before any authorisation of it landed. */
  voidTxHash?: string | null;
  /** The Idempotency-Key scope of the request that made this payment: recovery answers the key with its outcome. */
  idempotencyScope?: string;
  /** The authorised transfer's validAfter (with payTo, amount and validBefore: what releasePayment is called with). */
  validAfter?: number | null;
  /** The instance working on an in-flight payment owns it until then; recovery waits for it to pass. */
  leaseUntil?: Date;
  /** The instance (INSTANCE_ID) working on it: after a restart under the same id it is taken over at once. */
  instanceId?: string;
  payTo: string | null;
  validBefore: number | null;
  createdAt: Date;
  updatedAt: Date;
  settledAt: Date | null;
  onchain: { confirmed: boolean; blockNumber: number | null };
  /** The x402 scheme paid (absent: exact, an EIP-3009 transfer whose nonce is the paymentId). docs/schemes.md. */
  scheme?: "upto" | "batch-settlement";
  /** upto: the ceiling signed and authorised (base units); `amount` is what the seller settled once done. */
  ceiling?: string | null;
  /**
   * upto: the creditCeiling transaction that closed the ceiling and gave back what was not settled; batch-settlement: the
   * transaction that credited back what returned of the deposit this payment made (SchemeCredited, recorded by the
   * indexer: creditChannel, or a later deposit into the channel settling it).
   */
  creditTxHash?: string | null;
  /** batch-settlement: the channel this payment's voucher (and deposit, if it made one) went to. */
  channel?: PaymentChannelRef | null;
  /** The signed offer this payment paid under, when the seller signed its offers. */
  offer?: PaymentOffer | null;
  /** The seller's receipt for it, checked; one that is not verified flags the entry (payment.receipt_invalid). */
  receipt?: PaymentReceipt | null;
  /**
   * The transaction the seller reported broadcast and not yet confirmed (x402 `settlement_pending`), once checked to
   * carry exactly this payment's transfer: the payment waits for it (settle.ts), and recovery decides it from the chain.
   */
  pendingSettlementTx?: string | null;
  /** The swap that bought this payment's USDC shortfall (SwapExecuted); amounts in base units (wei, USDC 6 decimals). */
  swap?: { txHash: string; tokenIn: "WETH" | "ETH"; amountIn: string; amountOut: string } | null;
}

/** An approval's payment waiting for its owner: nothing signed yet. */
export interface QuotedPayment extends PaymentFields {
  phase: "quoted";
  status: "pending";
}

/** Signed, written down and committed to its leases: its authorisation may be on its way to the chain. */
export interface AuthorizingPayment extends PaymentFields {
  phase: "authorizing";
  status: "processing" | "blocked";
  paymentId: string;
}

/** Authorised on-chain (or a refusal's stray record): may be paid; recovery releases it with its transfer. */
export interface AuthorizedPayment extends PaymentFields {
  phase: "authorized";
  status: "processing" | "blocked";
  paymentId: string;
}

/** Final. */
export interface DonePayment extends PaymentFields {
  phase: "done";
  status: Exclude<LedgerStatus, "processing">;
}

/** A ledger entry, by phase. */
export type PaymentDoc = QuotedPayment | AuthorizingPayment | AuthorizedPayment | DonePayment;

/** A ledger entry as stored, whatever its phase: what the phase writer (src/payments/phases.ts) writes through. */
export type PaymentRecord = PaymentFields & { phase: PaymentPhase; status: LedgerStatus };

export type ApprovalStatus = "pending" | "approving" | "approved" | "denied" | "expired" | "failed";

export interface ApprovalDoc {
  _id?: ObjectId;
  approvalId: string;
  txnId: string;
  agentAddress: string;
  ownerAddress: string | null;
  merchant: string;
  serviceUrl: string;
  method: "GET" | "POST";
  /** The agent's POST body for the seller, as JSON text. */
  requestBody?: unknown;
  amount: string; // base units, the quoted price
  /** The seller's payTo when the approval was requested: what the owner signs (ApprovalDecision.payTo). */
  payTo?: string;
  maxAmount: string; // base units
  intent: string;
  status: ApprovalStatus;
  requestedAt: Date;
  resolvedAt: Date | null;
  expiresAt: Date;
}

export interface IdempotencyDoc {
  _id?: ObjectId;
  /** sha256(principal, Idempotency-Key) */
  scope: string;
  requestHash: string;
  state: "in_progress" | "done";
  /** The payment's answer; keys written before answers were typed hold `{ status, body, headers }` (read by storedAnswer). */
  response: PayAnswer | { status: number; body: unknown; headers?: Record<string, string> } | null;
  /** The instance running the first request, and until when (renewed while it runs): past it, another takes over. */
  holder?: string;
  leaseUntil?: Date;
  /** The run's generation (fencing token), increased when another instance takes the key over. */
  fence?: number;
  /** The payment committed to the key: while set, the key is never taken over, and its outcome is the key's answer. */
  txnId?: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/** A decoded event argument as stored: integers as decimal strings; an array of structs (PolicyUpdated's merchants)
 * as an array of plain records. */
export type ChainEventArg = string | number | boolean | Record<string, string | boolean>[];

export interface ChainEventDoc {
  _id?: ObjectId;
  chainId: number;
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  address: string;
  event: string;
  args: Record<string, ChainEventArg>;
  agentAddress: string | null;
  paymentId: string | null;
  confirmed: boolean;
  removed: boolean;
}

/** A settlement the in-process facilitator broadcast and has not seen confirmed (src/x402/pendingSettlements.ts). */
export interface PendingSettlementDoc {
  _id?: ObjectId;
  /** sha256 of the mechanism's key (for the exact scheme, the payer's signature, which may be long). */
  key: string;
  txHash: string;
  expiresAt: Date;
}

export interface IndexerStateDoc {
  _id?: ObjectId;
  name: string;
  chainId: number;
  nextBlock: number;
  updatedAt: Date;
}
