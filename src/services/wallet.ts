/** Balances: USDC and ETH read from chain, budget from the agent's policy contract. */
import { formatEther } from "ethers";
import { fromBaseUnits } from "../amounts";
import type { AgentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import type { PolicyService } from "./policies";

export class WalletService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly policies: PolicyService,
  ) {}

  async balance(agent: AgentDoc) {
    const { chain } = this.ctx;
    const [usdc, eth, blockNumber, policy] = await Promise.all([
      chain.usdc.balanceOf(agent.address) as Promise<bigint>,
      chain.provider.getBalance(agent.address),
      chain.provider.getBlockNumber(),
      this.policies.onchain(agent),
    ]);
    const remaining = policy.dailyBudget > policy.spentToday ? policy.dailyBudget - policy.spentToday : 0n;
    return {
      agentAddress: agent.address,
      chainId: chain.chainId,
      blockNumber,
      usdc: fromBaseUnits(usdc),
      eth: formatEther(eth),
      currency: "USDC" as const,
      dailyBudget: fromBaseUnits(policy.dailyBudget),
      spentToday: fromBaseUnits(policy.spentToday),
      remainingDailyBudget: fromBaseUnits(remaining),
      policyContract: agent.policyAddress,
      deployed: policy.deployed,
      paused: policy.paused,
    };
  }
}
