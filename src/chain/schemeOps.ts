/**
 * The operator's calls for the x402 schemes beyond exact (contracts/ISpendPolicySchemes.sol, called on the agent's
 * own address): authorise a channel deposit or an upto ceiling under the policy, credit back what returned, and the
 * views the service reads. Receipts are decoded into what the payment's steps need.
 */
import type { TransactionReceipt } from "ethers";
import type { ChannelConfigFields } from "../store/channelDocuments";
import type { ChainClient } from "./client";
import { bind, parseEvent } from "./contracts";
import { decodeRevert } from "./errors";
import { reasonName } from "./reasons";
import { type AllowlistProof, leafStruct } from "../policy/allowlist";
import { NO_APPROVAL, type AuthorizeResult, type OwnerApprovalInput } from "./policyOps";

const AUTHORIZE_GAS_LIMIT = 400_000n;

/** ISpendPolicy.ChannelConfig (the channel document keeps the same fields). */
export type ChannelConfigInput = ChannelConfigFields;

/** ISpendPolicy.ChannelDeposit: one ERC-3009 deposit (nonce keccak256(abi.encode(channelId, nonceSalt))). */
export interface ChannelDepositInput {
  amount: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonceSalt: string;
}

/** ISpendPolicy.Ceiling: the Permit2 witness transfer an upto payment signs. */
export interface CeilingInput {
  payTo: string;
  facilitator: string;
  amount: bigint;
  nonce: bigint;
  deadline: bigint;
  validAfter: bigint;
}

export interface CreditResult {
  credited: bigint;
  /** Null when nothing had come back to credit (no transaction). */
  txHash: string | null;
  receipt: TransactionReceipt | null;
}

export class SchemeOps {
  constructor(private readonly chain: ChainClient) {}

  private at(agent: string, read = false) {
    return bind("SpendPolicySchemes", agent, read ? this.chain.provider : this.chain.operator);
  }

  /** authorizeDeposit: one deposit into `config`'s channel, authorised or blocked (PaymentBlocked) under the policy. */
  authorizeDeposit(
    agent: string,
    paymentId: string,
    merchant: string,
    allowed: AllowlistProof,
    config: ChannelConfigInput,
    deposit: ChannelDepositInput,
    approval: OwnerApprovalInput = NO_APPROVAL,
    onSent?: (txHash: string) => Promise<void>,
  ): Promise<AuthorizeResult> {
    const args = [paymentId, merchant, leafStruct(allowed), allowed.proof, config, deposit, approvalStruct(approval)];
    return this.authorizing(agent, "authorizeDeposit", args, allowed, onSent);
  }

  /** authorizeCeiling: one upto ceiling (the wallet approves Permit2 for exactly it), authorised or blocked. */
  authorizeCeiling(
    agent: string,
    paymentId: string,
    merchant: string,
    allowed: AllowlistProof,
    ceiling: CeilingInput,
    approval: OwnerApprovalInput = NO_APPROVAL,
    onSent?: (txHash: string) => Promise<void>,
  ): Promise<AuthorizeResult> {
    const args = [paymentId, merchant, leafStruct(allowed), allowed.proof, ceiling, approvalStruct(approval)];
    return this.authorizing(agent, "authorizeCeiling", args, allowed, onSent);
  }

  /**
   * creditCeiling: closes upto ceiling `paymentId` (its permit dies) and credits what was not settled. Null when the
   * wallet knows no such open ceiling any more (credited before).
   */
  creditCeiling(agent: string, paymentId: string): Promise<CreditResult | null> {
    return this.crediting(agent, "creditCeiling", paymentId);
  }

  /**
   * creditChannel: credits deposit `paymentId` with what of its channel came back. Null once credited before (or
   * never authorised); a zero credit with no transaction when nothing came back yet.
   */
  creditChannel(agent: string, paymentId: string): Promise<CreditResult | null> {
    return this.crediting(agent, "creditChannel", paymentId);
  }

  /**
   * withdrawChannel (start: the channel's timed withdrawal of everything unclaimed) or finishChannelWithdraw (after
   * the channel's withdraw delay); money only comes back to the wallet. The receipt, for the gas.
   */
  async channelWithdrawal(agent: string, config: ChannelConfigInput, step: "start" | "finish"): Promise<TransactionReceipt> {
    const c = this.at(agent);
    const { receipt } = await this.chain.sendAndWait((o) =>
      step === "start" ? c.withdrawChannel(config, o) : c.finishChannelWithdraw(config, o),
    );
    return receipt;
  }

  /** The wallet's open upto ceiling (the zero hash: none). */
  async openCeiling(agent: string): Promise<string> {
    return this.at(agent, true).openCeiling();
  }

  /** A channel as the wallet counts it. */
  async channelState(
    agent: string,
    channelId: string,
  ): Promise<{ deposited: bigint; credited: bigint; epoch: bigint; latestDeposit: string }> {
    const [deposited, credited, epoch, latestDeposit] = await this.at(agent, true).channelState(channelId);
    return { deposited, credited, epoch, latestDeposit };
  }

  private async authorizing(
    agent: string,
    method: "authorizeDeposit" | "authorizeCeiling",
    args: unknown[],
    allowed: AllowlistProof,
    onSent?: (txHash: string) => Promise<void>,
  ): Promise<AuthorizeResult> {
    const gasLimit = AUTHORIZE_GAS_LIMIT + BigInt(allowed.proof.length) * 5_000n;
    const tx = await this.chain.sendCall(this.at(agent), method, args, { gasLimit });
    const [receipt] = await Promise.all([this.chain.waitMined(tx), onSent?.(tx.hash)]);
    for (const log of receipt.logs) {
      if (log.address.toLowerCase() !== agent.toLowerCase()) continue;
      const parsed = parseEvent("SpendPolicySchemes", log);
      const done = { receipt, txHash: receipt.hash, blockNumber: receipt.blockNumber };
      if (parsed?.name === "PaymentAuthorized") return { ...done, authorized: true, reason: null, spentToday: parsed.args.spentToday };
      if (parsed?.name === "PaymentBlocked")
        return { ...done, authorized: false, reason: reasonName(parsed.args.reason), spentToday: null };
    }
    throw new Error(`${method} ${receipt.hash} emitted neither PaymentAuthorized nor PaymentBlocked`);
  }

  private async crediting(agent: string, method: "creditCeiling" | "creditChannel", paymentId: string): Promise<CreditResult | null> {
    const c = this.at(agent);
    let receipt: TransactionReceipt;
    try {
      // Estimated first (unlike an authorisation): a credit made before answers the wallet's own error.
      ({ receipt } = await this.chain.sendAndWait((o) => c[method](paymentId, o)));
    } catch (err) {
      const name = decodeRevert(c, err)?.name;
      if (name === "SpendPolicyUnknownSchemePayment") return null;
      if (name === "SpendPolicyNothingToCredit") return { credited: 0n, txHash: null, receipt: null };
      throw err;
    }
    for (const log of receipt.logs) {
      const parsed = log.address.toLowerCase() === agent.toLowerCase() ? parseEvent("SpendPolicySchemes", log) : null;
      if (parsed?.name === "SchemeCredited") return { credited: parsed.args.amount, txHash: receipt.hash, receipt };
    }
    throw new Error(`${method} ${receipt.hash} emitted no SchemeCredited`);
  }
}

function approvalStruct(a: OwnerApprovalInput) {
  return { approvalId: a.approvalId, amount: a.amount, timestamp: a.timestamp, signature: a.signature };
}
