/** The operator's calls on a SpendPolicy and on USDC, with their receipts decoded. */
import { getAddress, type Log, type TransactionReceipt } from "ethers";
import type { ChainClient } from "./client";
import { decodeRevert } from "./errors";
import { eventTopic } from "./events";
import type { AllowlistProof } from "../policy/allowlist";

/**
 * The contract's BlockReason enum (ISpendPolicy.sol): the one table of on-chain block reasons.
 * `meaning` goes into the API reference, `message` to the agent that was refused.
 */
export const REASON_TABLE: readonly { code: number; name: string; meaning: string; message: string }[] = [
  {
    code: 1,
    name: "merchant_not_allowed",
    meaning: "the merchant's host is not on the allowlist (checked before the seller is contacted)",
    message: "The merchant is not on the agent's allowlist.",
  },
  {
    code: 2,
    name: "per_tx_limit_exceeded",
    meaning: "the price is above perTxLimit",
    message: "The price is above the per-payment limit.",
  },
  {
    code: 3,
    name: "daily_budget_exceeded",
    meaning: "the payment would take today's spend (UTC day) above dailyBudget",
    message: "The payment would exceed today's budget.",
  },
  {
    code: 4,
    name: "policy_paused",
    meaning: "the owner paused the agent (kill switch)",
    message: "The owner has paused this agent's payments.",
  },
  {
    code: 5,
    name: "approval_required",
    meaning: "above approvalThreshold without a valid owner approval",
    message: "The payment needs a valid owner approval.",
  },
  {
    code: 6,
    name: "velocity_exceeded",
    meaning: "the agent already made maxPaymentsPerHour payments this UTC hour",
    message: "The agent has made as many payments this hour as its policy allows.",
  },
  {
    code: 7,
    name: "policy_expired",
    meaning: "the policy's validUntil has passed; every payment is blocked until the owner signs a new policy",
    message: "The agent's policy has expired; the owner must sign a new one.",
  },
  {
    code: 8,
    name: "hourly_budget_exceeded",
    meaning: "the payment would take this UTC hour's spend above hourlyBudget",
    message: "The payment would exceed this hour's budget.",
  },
  {
    code: 9,
    name: "weekly_budget_exceeded",
    meaning: "the payment would take this 7-day window's spend (weeks from Thursday 00:00 UTC) above weeklyBudget",
    message: "The payment would exceed this week's budget.",
  },
  {
    code: 10,
    name: "monthly_budget_exceeded",
    meaning: "the payment would take this 30-day window's spend above monthlyBudget",
    message: "The payment would exceed this 30-day budget.",
  },
  {
    code: 11,
    name: "lifetime_budget_exceeded",
    meaning: "the payment would take the total authorised while a lifetime budget was set above lifetimeBudget",
    message: "The payment would exceed the agent's lifetime budget.",
  },
  {
    code: 12,
    name: "merchant_budget_exceeded",
    meaning: "the payment would take today's spend under the allowlist entry that admits the merchant above that entry's daily cap",
    message: "The payment would exceed this merchant's daily cap.",
  },
  {
    code: 13,
    name: "swap_slippage_exceeded",
    meaning:
      "the swap that was to buy the USDC shortfall would have paid more than the pool's TWAP price plus maxSwapSlippageBps (refused by the router on-chain, the payment then released)",
    message: "Buying the missing USDC would cost more than the owner's swap slippage bound allows.",
  },
];

/** Reason name by on-chain code. */
export const REASONS: Record<number, string> = Object.fromEntries(REASON_TABLE.map((r) => [r.code, r.name]));

const AUTHORIZE_GAS_LIMIT = 250_000n;

export const DECISION = { Allow: 0, RequiresApproval: 1, Block: 2 } as const;

export interface OwnerApprovalInput {
  approvalId: string;
  amount: bigint;
  timestamp: number;
  signature: string;
}

export const NO_APPROVAL: OwnerApprovalInput = { approvalId: "", amount: 0n, timestamp: 0, signature: "0x" };

export interface AuthorizeResult {
  /** The mined transaction's gas (the operator pays it). */
  receipt: Pick<TransactionReceipt, "gasUsed" | "gasPrice">;
  authorized: boolean;
  reason: string | null;
  spentToday: bigint | null;
  txHash: string;
  blockNumber: number;
}

/** The one EIP-3009 transfer a payment authorises (from = the agent wallet, nonce = the paymentId). */
export interface TransferInput {
  payTo: string;
  amount: bigint;
  validAfter: bigint;
  validBefore: bigint;
}

const toTuple = (t: TransferInput) => [t.payTo, t.amount, t.validAfter, t.validBefore];

/** Where a refused payment's on-chain record "pays" (nothing can ever settle it: it is never authorised). */
export const BLOCKED_RECORD_PAY_TO = "0x000000000000000000000000000000000000dEaD";

export class PolicyOps {
  constructor(private readonly chain: ChainClient) {}

  /** Simulates the policy: [decision, reason] with no state change. */
  async check(policyAddress: string, merchant: string, allowed: AllowlistProof, amount: bigint) {
    const c = this.chain.policyAt(policyAddress, this.chain.provider);
    const [decision, reason] = await c.checkPayment(merchant, allowed.leaf, allowed.cap, allowed.proof, amount);
    return { decision: Number(decision), reason: REASONS[Number(reason)] ?? null };
  }

  /** check() and `holder`'s USDC balance in one call (Multicall3): the payment path needs both, one round trip. */
  async checkWithBalance(policyAddress: string, merchant: string, allowed: AllowlistProof, amount: bigint, holder: string) {
    const c = this.chain.policyAt(policyAddress, this.chain.provider);
    const [checked, balance] = await this.chain.readMany([
      { contract: c, method: "checkPayment", args: [merchant, allowed.leaf, allowed.cap, allowed.proof, amount] },
      { contract: this.chain.usdc, method: "balanceOf", args: [holder] },
    ]);
    if (!checked || !balance) {
      // Asked again one by one, so that a failure fails as it always did (with the contract's error).
      const [r, usdc] = await Promise.all([this.check(policyAddress, merchant, allowed, amount), this.chain.usdc.balanceOf(holder)]);
      return { ...r, usdc: usdc as bigint };
    }
    return { decision: Number(checked[0]), reason: REASONS[Number(checked[1])] ?? null, usdc: balance[0] as bigint };
  }

  /**
   * authorizePayment of exactly `transfer`: authorised or blocked (PaymentBlocked on-chain), decoded from the
   * receipt. Once authorised, the agent wallet answers ERC-1271 for that one EIP-3009 transfer.
   */
  async authorize(
    policyAddress: string,
    paymentId: string,
    merchant: string,
    allowed: AllowlistProof,
    transfer: TransferInput,
    approval: OwnerApprovalInput = NO_APPROVAL,
    onSent?: (txHash: string) => Promise<void>,
  ): Promise<AuthorizeResult> {
    const c = this.chain.policyAt(policyAddress);
    const tuple = [approval.approvalId, approval.amount, approval.timestamp, approval.signature];
    // A fixed gas limit instead of an estimate: the simulation just ran, and an estimate is one more round trip on
    // every payment. Only gas used is paid; the worst case (approval, long proof) stays far below it.
    const gasLimit = AUTHORIZE_GAS_LIMIT + BigInt(allowed.proof.length) * 5_000n;
    const args = [paymentId, merchant, allowed.leaf, allowed.cap, allowed.proof, toTuple(transfer), tuple];
    const tx = await this.chain.sendCall(c, "authorizePayment", args, { gasLimit });
    // Recording the hash (for recovery) and waiting for the receipt overlap; both finish before anything goes on.
    const [receipt] = await Promise.all([this.chain.waitFor(tx), onSent?.(tx.hash)]);
    for (const log of this.logsOf(receipt, policyAddress)) {
      const parsed = c.interface.parseLog(log);
      if (parsed?.name === "PaymentAuthorized") {
        return {
          receipt,
          authorized: true,
          reason: null,
          spentToday: parsed.args.spentToday,
          txHash: receipt.hash,
          blockNumber: receipt.blockNumber,
        };
      }
      if (parsed?.name === "PaymentBlocked") {
        return {
          receipt,
          authorized: false,
          reason: REASONS[Number(parsed.args.reason)] ?? `reason_${parsed.args.reason}`,
          spentToday: null,
          txHash: receipt.hash,
          blockNumber: receipt.blockNumber,
        };
      }
    }
    throw new Error(`authorizePayment ${receipt.hash} emitted neither PaymentAuthorized nor PaymentBlocked`);
  }

  /**
   * releasePayment: gives an authorised payment's amount back and kills its authorisation for good. The contract
   * refuses it once USDC has used the nonce: then the payment settled, and this answers { settled: true }.
   */
  async release(
    policyAddress: string,
    paymentId: string,
    transfer: TransferInput,
  ): Promise<{ settled: false; txHash: string; receipt: TransactionReceipt } | { settled: true }> {
    const c = this.chain.policyAt(policyAddress);
    try {
      const { receipt } = await this.chain.sendAndWait((o) => c.releasePayment(paymentId, toTuple(transfer), o));
      return { settled: false, txHash: receipt.hash, receipt };
    } catch (err) {
      if (decodeRevert(c, err)?.name === "SpendPolicyPaymentSettled") return { settled: true };
      throw err;
    }
  }

  /** 1 while authorised and not released; 0 unknown or released. */
  async paymentState(policyAddress: string, paymentId: string): Promise<number> {
    return Number(await this.chain.policyAt(policyAddress, this.chain.provider).paymentState(paymentId));
  }

  /** Whether a mined transaction carries USDC's AuthorizationUsed(agent, nonce): the settlement of this payment. */
  async settledIn(txHash: string, agent: string, nonce: string): Promise<boolean> {
    // A seller may answer before its settlement is mined: wait for it, within bounds.
    const receipt = await this.chain.receiptOf(txHash, 30_000);
    if (!receipt || receipt.status !== 1) return false;
    const usdc = (this.chain.usdc.target as string).toLowerCase();
    const topic = eventTopic(this.chain.usdc.interface, "AuthorizationUsed");
    return receipt.logs.some(
      (l) =>
        l.address.toLowerCase() === usdc &&
        l.topics[0] === topic &&
        getAddress("0x" + l.topics[1].slice(26)) === getAddress(agent) &&
        l.topics[2].toLowerCase() === nonce.toLowerCase(),
    );
  }

  async authorizationUsed(agent: string, nonce: string): Promise<boolean> {
    return this.chain.usdc.authorizationState(agent, nonce);
  }

  /** The settlement transaction of an EIP-3009 authorisation (USDC AuthorizationUsed), if it is on-chain. */
  async settlementTx(agent: string, nonce: string, fromBlock: number): Promise<string | null> {
    const filter = this.chain.usdc.filters.AuthorizationUsed(agent, nonce);
    const logs = await this.chain.usdc.queryFilter(filter, Math.max(0, fromBlock));
    return logs.length ? logs[logs.length - 1].transactionHash : null;
  }

  private logsOf(receipt: TransactionReceipt, address: string): readonly Log[] {
    return receipt.logs.filter((l) => l.address.toLowerCase() === address.toLowerCase());
  }
}
