/** The operator's calls on a SpendPolicy and on USDC, with their receipts decoded. */
import { type TransactionReceipt } from "ethers";
import type { ChainClient } from "./client";
import type { MinedReceipt } from "./rpc/rawRpc";
import { addressOf, eventTopic, parseEvent, readOf } from "./contracts";
import { decodeRevert } from "./errors";
import { type Decision, type OnchainReasonName, type PaymentState, decisionOf, onchainReason, paymentStateOf, reasonName } from "./reasons";
import { type AllowlistProof, leafStruct } from "../policy/allowlist";

const AUTHORIZE_GAS_LIMIT = 250_000n;

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
  /** The PaymentBlocked reason (`reason_<code>` for a code this service does not know yet). */
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

/** What checkPayment answers: the decision and, when it is not Allow, the reason. */
export interface CheckResult {
  decision: Decision;
  reason: OnchainReasonName | null;
}

/** The ISpendPolicy.Transfer struct of a transfer. */
export const transferStruct = (t: TransferInput) => ({
  payTo: t.payTo,
  amount: t.amount,
  validAfter: t.validAfter,
  validBefore: t.validBefore,
});

/** Where a refused payment's on-chain record "pays" (nothing can ever settle it: it is never authorised). */
export const BLOCKED_RECORD_PAY_TO = "0x000000000000000000000000000000000000dEaD";

/** check()'s answer with the holder's USDC balance read in the same call. */
export type CheckWithBalance = CheckResult & { usdc: bigint };

export class PolicyOps {
  constructor(private readonly chain: ChainClient) {}

  /** Simulates the policy for `amount` to `payTo`: its decision and reason, with no state change. */
  async check(policyAddress: string, merchant: string, allowed: AllowlistProof, payTo: string, amount: bigint): Promise<CheckResult> {
    const c = this.chain.policyAt(policyAddress, this.chain.provider);
    const { decision, reason } = await c.checkPayment(merchant, leafStruct(allowed), allowed.proof, payTo, amount);
    return { decision: decisionOf(decision), reason: onchainReason(reason) };
  }

  /** check() and `holder`'s USDC balance in one call (Multicall3): the payment path needs both, one round trip. */
  async checkWithBalance(
    policyAddress: string,
    merchant: string,
    allowed: AllowlistProof,
    payTo: string,
    amount: bigint,
    holder: string,
  ): Promise<CheckWithBalance> {
    const c = this.chain.policyAt(policyAddress, this.chain.provider);
    const [checked, balance] = await this.chain.readMany([
      readOf(c, "checkPayment", merchant, leafStruct(allowed), allowed.proof, payTo, amount),
      readOf(this.chain.usdc, "balanceOf", holder),
    ] as const);
    if (!checked || balance === null) {
      // Asked again one by one, so that a failure fails as it always did (with the contract's error).
      const [r, usdc] = await Promise.all([this.check(policyAddress, merchant, allowed, payTo, amount), this.chain.usdc.balanceOf(holder)]);
      return { ...r, usdc };
    }
    return { decision: decisionOf(checked[0]), reason: onchainReason(checked[1]), usdc: balance };
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
    const ownerApproval = {
      approvalId: approval.approvalId,
      amount: approval.amount,
      timestamp: approval.timestamp,
      signature: approval.signature,
    };
    // A fixed gas limit instead of an estimate: the simulation just ran, and an estimate is one more round trip on
    // every payment. Only gas used is paid; the worst case (approval, long proof) stays far below it.
    const gasLimit = AUTHORIZE_GAS_LIMIT + BigInt(allowed.proof.length) * 5_000n;
    const args = [paymentId, merchant, leafStruct(allowed), allowed.proof, transferStruct(transfer), ownerApproval];
    const tx = await this.chain.sendCall(c, "authorizePayment", args, { gasLimit });
    // Recording the hash (for recovery) and waiting for the receipt overlap; both finish before anything goes on.
    const [receipt] = await Promise.all([this.chain.waitMined(tx), onSent?.(tx.hash)]);
    for (const log of this.logsOf(receipt, policyAddress)) {
      const parsed = parseEvent("SpendPolicy", log);
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
          reason: reasonName(parsed.args.reason),
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
      const { receipt } = await this.chain.sendAndWait((o) => c.releasePayment(paymentId, transferStruct(transfer), o));
      return { settled: false, txHash: receipt.hash, receipt };
    } catch (err) {
      if (decodeRevert(c, err)?.name === "SpendPolicyPaymentSettled") return { settled: true };
      throw err;
    }
  }

  /**
   * voidUnrecordedPayment: no authorisation of `paymentId` can land from then on. `voided: false` when the paymentId
   * has a record already (authorised, settled or void: paymentState tells which), also when one landed between the
   * estimate and the void (the void then reverted on-chain: `receipt` is its gas). Throws for anything else (a policy
   * implementation from before the void, a node that did not answer).
   */
  async voidUnrecorded(
    policyAddress: string,
    paymentId: string,
  ): Promise<{ voided: true; txHash: string; receipt: TransactionReceipt } | { voided: false; receipt: TransactionReceipt | null }> {
    const c = this.chain.policyAt(policyAddress);
    try {
      const { receipt } = await this.chain.sendAndWait((o) => c.voidUnrecordedPayment(paymentId, o));
      return { voided: true, txHash: receipt.hash, receipt };
    } catch (err) {
      if (decodeRevert(c, err)?.name === "SpendPolicyPaymentExists") return { voided: false, receipt: null };
      const mined = (err as { receipt?: TransactionReceipt | null }).receipt;
      if (mined) return { voided: false, receipt: mined };
      throw err;
    }
  }

  /** Authorized while authorised and not released; Void once voided; None for an unknown or released payment. */
  async paymentState(policyAddress: string, paymentId: string): Promise<PaymentState> {
    return paymentStateOf(await this.chain.policyAt(policyAddress, this.chain.provider).paymentState(paymentId));
  }

  /** Whether a mined transaction carries USDC's AuthorizationUsed(agent, nonce): the settlement of this payment. */
  async settledIn(txHash: string, agent: string, nonce: string): Promise<boolean> {
    // A seller may answer before its settlement is mined: wait for it, within bounds.
    // The node's receipt as it came (only status and logs are read): ethers' formatting checksums every address in it.
    const receipt = await this.chain.receipts.wait<RawReceipt>(
      txHash,
      () => this.chain.rpc.send<RawReceipt | null>("eth_getTransactionReceipt", [txHash]),
      30_000,
    );
    if (receipt?.status !== "0x1" || !Array.isArray(receipt.logs)) return false;
    const usdc = addressOf(this.chain.usdc).toLowerCase();
    const topic = eventTopic("Usdc", "AuthorizationUsed");
    const from = "0x" + "0".repeat(24) + agent.toLowerCase().slice(2);
    return receipt.logs.some(
      (l) =>
        l.address?.toLowerCase() === usdc &&
        l.topics?.[0] === topic &&
        l.topics[1]?.toLowerCase() === from &&
        l.topics[2]?.toLowerCase() === nonce.toLowerCase(),
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

  private logsOf(receipt: MinedReceipt, address: string): MinedReceipt["logs"] {
    return receipt.logs.filter((l) => l.address.toLowerCase() === address.toLowerCase());
  }
}

/** The fields settledIn reads of a JSON-RPC receipt. */
interface RawReceipt {
  status?: string;
  logs?: { address?: string; topics?: string[] }[];
}
