/** Balances: USDC, ETH and WETH read from chain, budget from the agent's policy contract. */
import { formatEther } from "ethers";
import { fromBaseUnits } from "../amounts";
import { WETH_ADDRESS } from "../chain/addresses";
import { bind, readOf } from "../chain/contracts";
import type { AgentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import type { PolicyService } from "./policies";

/** WETH's balanceOf, read through Multicall3 (readMany needs only its address and interface). */
let weth: ReturnType<typeof bind<"WETH9">> | undefined;
const WETH = () => (weth ??= bind("WETH9", WETH_ADDRESS));

export class WalletService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly policies: PolicyService,
  ) {}

  async balance(agent: AgentDoc) {
    const { chain } = this.ctx;
    // Everything in one round trip, read at one block.
    const reads = this.policies.policyReads(agent.policyAddress);
    const [p, paused, spent, last, windows, operator, epoch, usdc, eth, block, wethBalance] = await chain.readMany([
      ...reads,
      readOf(chain.usdc, "balanceOf", agent.address),
      readOf(chain.multicall, "getEthBalance", agent.address),
      readOf(chain.multicall, "getBlockNumber"),
      // Base and Base Sepolia have WETH there; another chain may have nothing at that address (read as null).
      readOf(WETH(), "balanceOf", agent.address),
    ]);
    if (usdc === null || eth === null || block === null) throw new Error(`could not read the balances of ${agent.address}`);
    const policy = await this.policies.fromReads(agent.policyAddress, [p, paused, spent, last, windows, operator, epoch]);
    const blockNumber = Number(block);
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
