/** The operator's calls on a SpendPolicy and on USDC, with their receipts decoded. */
import { Contract, Signature, getAddress, type Log, type TransactionReceipt } from "ethers";
import type { AgentSigner } from "../wallets/provider";
import type { ChainClient } from "./client";

export const REASONS: Record<number, string> = {
  1: "merchant_not_allowed",
  2: "per_tx_limit_exceeded",
  3: "daily_budget_exceeded",
  4: "policy_paused",
  5: "approval_required",
};

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
  authorized: boolean;
  reason: string | null;
  spentToday: bigint | null;
  txHash: string;
  blockNumber: number;
}

const CANCEL_TYPES = { CancelAuthorization: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }] };
const USDC_CANCEL_ABI = [
  "function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
];

export class PolicyOps {
  constructor(private readonly chain: ChainClient) {}

  /** Simulates the policy: [decision, reason] with no state change. */
  async check(policyAddress: string, merchant: string, leaf: string, proof: string[], amount: bigint) {
    const c = this.chain.policyAt(policyAddress, this.chain.provider);
    const [decision, reason] = await c.checkPayment(merchant, leaf, proof, amount);
    return { decision: Number(decision), reason: REASONS[Number(reason)] ?? null };
  }

  /** authorizePayment: authorised or blocked (PaymentBlocked on-chain), decoded from the receipt. */
  async authorize(
    policyAddress: string,
    paymentId: string,
    merchant: string,
    leaf: string,
    proof: string[],
    amount: bigint,
    approval: OwnerApprovalInput = NO_APPROVAL,
    onSent?: (txHash: string) => Promise<void>,
  ): Promise<AuthorizeResult> {
    const c = this.chain.policyAt(policyAddress);
    const tuple = [approval.approvalId, approval.amount, approval.timestamp, approval.signature];
    // A fixed gas limit instead of an estimate: the simulation just ran, and an estimate is one more round trip on
    // every payment. Only gas used is paid; the worst case (approval, long proof) stays far below it.
    const gasLimit = AUTHORIZE_GAS_LIMIT + BigInt(proof.length) * 5_000n;
    const tx = await this.chain.sendTx((o) => c.authorizePayment(paymentId, merchant, leaf, proof, amount, tuple, { ...o, gasLimit }));
    // Recording the hash (for recovery) and waiting for the receipt overlap; both finish before anything goes on.
    const [receipt] = await Promise.all([this.chain.waitFor(tx), onSent?.(tx.hash)]);
    for (const log of this.logsOf(receipt, policyAddress)) {
      const parsed = c.interface.parseLog(log);
      if (parsed?.name === "PaymentAuthorized") {
        return { authorized: true, reason: null, spentToday: parsed.args.spentToday, txHash: receipt.hash, blockNumber: receipt.blockNumber };
      }
      if (parsed?.name === "PaymentBlocked") {
        return {
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

  async release(policyAddress: string, paymentId: string): Promise<string> {
    const c = this.chain.policyAt(policyAddress);
    const { receipt } = await this.chain.sendAndWait((o) => c.releasePayment(paymentId, o));
    return receipt.hash;
  }

  /** 0 unknown, 1 authorised, 2 released. */
  async paymentState(policyAddress: string, paymentId: string): Promise<number> {
    return Number(await this.chain.policyAt(policyAddress, this.chain.provider).paymentState(paymentId));
  }

  /** Whether a mined transaction carries USDC's AuthorizationUsed(agent, nonce): the settlement of this payment. */
  async settledIn(txHash: string, agent: string, nonce: string): Promise<boolean> {
    // A seller may answer before its settlement is mined: wait for it, within bounds.
    const receipt =
      (await this.chain.provider.getTransactionReceipt(txHash)) ?? (await this.chain.provider.waitForTransaction(txHash, 1, 30_000));
    if (!receipt || receipt.status !== 1) return false;
    const usdc = (this.chain.usdc.target as string).toLowerCase();
    const topic = this.chain.usdc.interface.getEvent("AuthorizationUsed")!.topicHash;
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

  /** Cancels the agent's open EIP-3009 authorisation (signed by the agent, relayed by the operator); the tx hash. */
  async cancelAuthorization(signer: AgentSigner, nonce: string): Promise<string> {
    const usdc = new Contract(this.chain.usdc.target as string, USDC_CANCEL_ABI, this.chain.operator);
    const [name, version] = await Promise.all([this.chain.usdc.name(), this.chain.usdc.version()]);
    const domain = { name, version, chainId: this.chain.chainId, verifyingContract: getAddress(usdc.target as string) };
    const sig = Signature.from(
      await signer.signTypedData({ domain, types: CANCEL_TYPES, primaryType: "CancelAuthorization", message: { authorizer: signer.address, nonce } }),
    );
    const { receipt } = await this.chain.sendAndWait((o) => usdc.cancelAuthorization(signer.address, nonce, sig.v, sig.r, sig.s, o));
    return receipt.hash;
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

