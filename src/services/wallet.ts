/** Balances: USDC, ETH and WETH read from chain, budget from the agent's policy contract. */
import { Contract, formatEther } from "ethers";
import { fromBaseUnits } from "../amounts";
import { WETH_ADDRESS } from "../chain/addresses";
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
    const weth = new Contract(WETH_ADDRESS, ["function balanceOf(address) view returns (uint256)"], chain.provider);
    const [usdc, eth, wethBalance, blockNumber, policy] = await Promise.all([
      chain.usdc.balanceOf(agent.address) as Promise<bigint>,
      chain.provider.getBalance(agent.address),
      // Base and Base Sepolia have WETH there; another chain may have nothing at that address.
      (weth.balanceOf(agent.address) as Promise<bigint>).catch(() => null),
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
      weth: wethBalance === null ? null : formatEther(wethBalance),
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
