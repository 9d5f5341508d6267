/** Balances: USDC, ETH and WETH read from chain, budget from the agent's policy contract. */
import { Contract, formatEther } from "ethers";
import { fromBaseUnits } from "../amounts";
import { WETH_ADDRESS } from "../chain/addresses";
import type { AgentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import type { PolicyService } from "./policies";

/** WETH's balanceOf, read through Multicall3 (readMany needs only its address and interface). */
const WETH = new Contract(WETH_ADDRESS, ["function balanceOf(address) view returns (uint256)"]);

export class WalletService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly policies: PolicyService,
  ) {}

  async balance(agent: AgentDoc) {
    const { chain } = this.ctx;
    // Everything in one round trip, read at one block.
    const reads = this.policies.policyReads(agent.policyAddress);
    const results = await chain.readMany([
      ...reads,
      { contract: chain.usdc, method: "balanceOf", args: [agent.address] },
      { contract: chain.multicall, method: "getEthBalance", args: [agent.address] },
      { contract: chain.multicall, method: "getBlockNumber" },
      // Base and Base Sepolia have WETH there; another chain may have nothing at that address (read as null).
      { contract: WETH, method: "balanceOf", args: [agent.address] },
    ]);
    const [usdcRead, ethRead, blockRead, wethRead] = results.slice(reads.length);
    if (!usdcRead || !ethRead || !blockRead) throw new Error(`could not read the balances of ${agent.address}`);
    const policy = await this.policies.fromReads(agent.policyAddress, results.slice(0, reads.length));
    const [usdc, eth, blockNumber] = [usdcRead[0] as bigint, ethRead[0] as bigint, Number(blockRead[0])];
    const wethBalance = wethRead ? (wethRead[0] as bigint) : null;
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
