/** The shape of a batch-settlement channel's MongoDB document (the `channels` collection) and the vouchers it records. */
import type { ObjectId } from "mongodb";

/** ISpendPolicy.ChannelConfig: a channel paid from the wallet alone (payer the wallet, payerAuthorizer 0). */
export interface ChannelConfigFields {
  payer: string;
  payerAuthorizer: string;
  receiver: string;
  receiverAuthorizer: string;
  token: string;
  withdrawDelay: number;
  salt: string;
}

/**
 * A voucher as its channel records it before it leaves the process (src/payments/schemes/vouchers.ts): in the same
 * write that moves the channel's sequence past it. Its outcome is its ledger entry (`txnId`); until that is written
 * the record is the voucher's only trace, and recovery settles it from what the seller says of it.
 */
export interface ChannelVoucher {
  txnId: string;
  /** The voucher's maxClaimableAmount (base units): what the seller's charge is once it counted it. */
  cumulative: string;
  /** What the channel had charged before it: the seller's charge if it did not count it. */
  base: string;
  /** The request's price. */
  amount: string;
  intent: string;
  serviceUrl: string;
  idempotencyScope?: string;
  createdAt: Date;
  /** The instance sending it owns it until then; recovery leaves it alone before (unless that instance is gone). */
  leaseUntil: Date;
  instanceId: string;
}

/**
 * A batch-settlement channel an agent's wallet pays through (src/payments/schemes/channel.ts): the wallet is its payer, the
 * seller's payTo its receiver. Amounts in USDC base units. Each write is a compare-and-set on `version`, so its
 * voucher sequence never forks across instances or restarts.
 */
export interface ChannelDoc {
  _id?: ObjectId;
  /** bytes32, lower case. */
  channelId: string;
  agentAddress: string;
  ownerAddress: string | null;
  merchant: string;
  /** The URL the channel was opened at: a cooperative refund asks the seller there. */
  serviceUrl: string;
  receiver: string;
  /** ISpendPolicy.ChannelConfig, addresses checksummed. */
  config: ChannelConfigFields;
  /** What the channel holds of the wallet's deposits as last seen (deposits landed, less refunds and withdrawals). */
  balance: string;
  /**
   * What the seller has charged in all, as far as the ledger had it at the channel's last write: the vouchers in
   * `unsettled` whose entries are approved add theirs (vouchers.ts, settledRead).
   */
  charged: string;
  /** The highest maxClaimableAmount the wallet signed: the most the seller can ever claim. */
  signed: string;
  /**
   * The wallet's authorisation epoch when the channel's latest deposit was authorised: the wallet answers the channel's
   * vouchers only while it is still the current one (a pause, a policy, operator or owner change starts a new epoch).
   */
  epoch: number;
  /** Every deposit authorised for the channel (its paymentId), and whether it was credited back. */
  deposits: { paymentId: string; amount: string; txnId: string; credited: string | null }[];
  /** Cooperative refunds the seller's facilitator made (refundWithSignature), USDC back to the wallet. */
  refunds?: { amount: string; txHash: string | null; at: Date }[];
  /** Vouchers recorded since the channel's charge was last written, oldest first: their entries say what they charged. */
  unsettled?: ChannelVoucher[];
  /** open: vouchers are paid from it; closed: refunded and credited (a later payment opens it again with a deposit). */
  status: "open" | "closed";
  version: number;
  createdAt: Date;
  updatedAt: Date;
}
