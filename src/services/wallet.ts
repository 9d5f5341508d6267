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
    // Everything in one round trip, read at one block.
    const reads = this.policies.policyReads(agent);
    const results = await chain.readMany([
      ...reads,
      { contract: chain.usdc, method: "balanceOf", args: [agent.address] },
      { contract: chain.multicall, method: "getEthBalance", args: [agent.address] },
      { contract: chain.multicall, method: "getBlockNumber" },
    ]);
    const [usdcRead, ethRead, blockRead] = results.slice(reads.length);
    if (!usdcRead || !ethRead || !blockRead) throw new Error(`could not read the balances of ${agent.address}`);
    const policy = await this.policies.fromReads(agent, results.slice(0, reads.length));
    const [usdc, eth, blockNumber] = [usdcRead[0] as bigint, ethRead[0] as bigint, Number(blockRead[0])];
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
