/**
 * The owner's controls beyond the policy, each relayed on-chain with the owner's EIP-712 signature: the kill switch
 * (SetPaused), taking funds out of the agent's wallet (Withdraw) and handing ownership over (SetOwner).
 */
import { policyChanged } from "../store/channels";
import { ZeroAddress, formatUnits, getAddress, isError, parseUnits } from "ethers";
import { bind } from "../chain/contracts";
import { revertToAppError } from "../chain/errors";
import { SET_OWNER_TYPES, SET_PAUSED_TYPES, WITHDRAW_TYPES, policyDomain } from "../chain/typedData";
import { appError, badRequest, conflict } from "../errors";
import type { SetOwnerRequest, WithdrawRequest } from "../schemas/owner";
import type { AgentDoc } from "../store/documents";
import { reassignAgentOwner } from "../store/owners";
import type { ServiceContext } from "./context";

export class ControlService {
  constructor(private readonly ctx: ServiceContext) {}

  async setPaused(agent: AgentDoc, input: { paused: boolean; epoch?: number; humanSignature: string; timestamp: number }) {
    if (!agent.ownerAddress) throw conflict(`Agent ${agent.address} has no owner yet.`);
    const { chain } = this.ctx;
    if (!(await chain.isDeployed(agent.policyAddress))) {
      throw conflict(`Agent ${agent.address} has no policy contract yet: set a policy first.`);
    }
    // The owner the contract checks: after a hand-over relayed by anyone else, the new owner's kill switch works before
    // the indexer has caught up (and the previous owner's is refused here, not by a reverted transaction).
    const owner = await this.onchainOwner(agent);
    await this.ctx.signatures.verifyAndConsume({
      kind: "SetPaused",
      domain: policyDomain(this.ctx.config.chainId, agent.policyAddress),
      types: SET_PAUSED_TYPES,
      message: { agent: agent.address, paused: input.paused, epoch: input.epoch ?? 0, timestamp: input.timestamp },
      signature: input.humanSignature,
      expectedSigner: owner,
      timestamp: input.timestamp,
    });
    const policy = chain.policyAt(agent.policyAddress);
    // Not behind the agent's payment lock: the kill switch must not wait for a payment in progress.
    const { receipt } = await chain
      .sendAndWait((o) => policy.setPaused(input.paused, input.epoch ?? 0, input.timestamp, input.humanSignature, o))
      .catch((err: unknown) => revertToAppError(policy, err));
    await this.ctx.gas.charge(owner, receipt);
    // Channel vouchers are paid without a simulation: every instance reads the pause before its next one.
    await policyChanged(this.ctx.store, agent.address);
    this.ctx.logger.info({ agent: agent.address, paused: input.paused, txHash: receipt.hash }, "pause set");
    return { agentAddress: agent.address, paused: input.paused, policyContract: agent.policyAddress, txHash: receipt.hash };
  }

  /** Moves funds out of the agent's wallet with the owner's Withdraw signature (works while paused). */
  async withdraw(agent: AgentDoc, input: WithdrawRequest) {
    const owner = await this.deployedOwner(agent);
    const { chain } = this.ctx;
    const token = input.token === "ETH" ? ZeroAddress : input.token === "USDC" ? getAddress(this.ctx.config.usdcAddress) : input.token;
    const erc20 = token === ZeroAddress ? null : bind("ERC20", token, chain.provider);
    const decimals = erc20
      ? Number(await erc20.decimals().catch(() => Promise.reject(badRequest(`${token} is not an ERC-20 token.`))))
      : 18;
    let amount: bigint;
    try {
      amount = parseUnits(input.amount, decimals);
    } catch {
      throw badRequest(`amount: at most ${decimals} decimals for this token.`);
    }
    if (amount <= 0n) throw badRequest("amount: must be greater than 0.");
    const check = {
      kind: "Withdraw",
      domain: policyDomain(this.ctx.config.chainId, agent.policyAddress),
      types: WITHDRAW_TYPES,
      message: { agent: agent.address, token, to: input.to, amount, timestamp: input.timestamp },
      signature: input.humanSignature,
      expectedSigner: owner,
      timestamp: input.timestamp,
    };
    // Too little in the wallet: refused before the signature is used, so the owner can send it again later.
    await this.ctx.signatures.verifyAndConsume(check, async () => {
      const balance: bigint = erc20 ? await erc20.balanceOf(agent.address) : await chain.provider.getBalance(agent.address);
      if (balance < amount) {
        throw appError(
          "insufficient_funds",
          `The wallet holds ${formatUnits(balance, decimals)} of this token, less than ${input.amount}.`,
        );
      }
    });
    const wallet = chain.policyAt(agent.policyAddress);
    const { receipt } = await chain
      .sendAndWait((o) => wallet.withdraw(token, input.to, amount, input.timestamp, input.humanSignature, o))
      .catch((err: unknown) => revertToAppError(wallet, err))
      .catch((err: unknown) => {
        // Refused by the token after the balance check (another withdrawal or a payment took the funds): nothing moved.
        if (!isError(err, "CALL_EXCEPTION")) throw err;
        throw appError("withdraw_failed", "The token refused the transfer on-chain (did the balance change meanwhile?); nothing moved.");
      });
    await this.ctx.gas.charge(owner, receipt);
    this.ctx.logger.info({ agent: agent.address, token, to: input.to, amount: amount.toString(), txHash: receipt.hash }, "withdrawn");
    return {
      status: "withdrawn" as const,
      agentAddress: agent.address,
      token,
      to: input.to,
      amount: formatUnits(amount, decimals),
      txHash: receipt.hash,
    };
  }

  /** Hands the agent over to a new owner with the current owner's SetOwner signature, on-chain and in the store. */
  async setOwner(agent: AgentDoc, input: SetOwnerRequest) {
    const owner = await this.deployedOwner(agent);
    // An agent wallet signs nothing but payments its policy authorised: as owner it would lock the funds in for good.
    if (input.newOwner === agent.address || (await this.ctx.store.agents.findOne({ address: input.newOwner }))) {
      throw badRequest(`newOwner ${input.newOwner} is an agent wallet, which can never sign as owner; name the new owner's own wallet.`);
    }
    await this.ctx.signatures.verifyAndConsume({
      kind: "SetOwner",
      domain: policyDomain(this.ctx.config.chainId, agent.policyAddress),
      types: SET_OWNER_TYPES,
      message: { agent: agent.address, newOwner: input.newOwner, timestamp: input.timestamp },
      signature: input.humanSignature,
      expectedSigner: owner,
      timestamp: input.timestamp,
    });
    const { chain, store } = this.ctx;
    const wallet = chain.policyAt(agent.policyAddress);
    const { receipt } = await chain
      .sendAndWait((o) => wallet.setOwner(input.newOwner, input.timestamp, input.humanSignature, o))
      .catch((err: unknown) => revertToAppError(wallet, err));
    await this.ctx.gas.charge(owner, receipt);
    // The chain decided; the store follows (the indexer also does, for a hand-over relayed by anyone else).
    // The agent's keys are revoked with it (store/owners.ts): forgotten here at once, as any revocation.
    if (await reassignAgentOwner(store, agent.address, input.newOwner)) this.ctx.keys.forgetAll();
    this.ctx.logger.info({ agent: agent.address, from: owner, to: input.newOwner, txHash: receipt.hash }, "owner set");
    return { agentAddress: agent.address, ownerAddress: input.newOwner, txHash: receipt.hash };
  }

  /** The owner the contract knows, for an agent whose wallet is deployed. */
  private async deployedOwner(agent: AgentDoc): Promise<string> {
    if (!agent.ownerAddress) throw conflict(`Agent ${agent.address} has no owner yet.`);
    if (!(await this.ctx.chain.isDeployed(agent.policyAddress))) {
      throw appError("no_policy", `Agent ${agent.address} has no wallet contract yet: its owner deploys it by setting a policy.`);
    }
    return this.onchainOwner(agent);
  }

  private async onchainOwner(agent: AgentDoc): Promise<string> {
    return getAddress(await this.ctx.chain.policyAt(agent.policyAddress, this.ctx.chain.provider).owner());
  }
}
