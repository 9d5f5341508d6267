/** Balances: USDC, ETH and WETH read from chain, budget from the agent's policy contract. */
import { formatEther } from "ethers";
import { fromBaseUnits } from "../amounts";
import { bind, readOf } from "../chain/contracts";
import type { AgentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import type { PolicyService } from "./policies";

/** WETH's balanceOf at the network's WETH, read through Multicall3 (readMany needs only its address and interface). */
const wethAt = new Map<string, ReturnType<typeof bind<"WETH9">>>();
function WETH(address: string) {
  let weth = wethAt.get(address);
  if (!weth) wethAt.set(address, (weth = bind("WETH9", address)));
  return weth;
}

export class WalletService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly policies: PolicyService,
  ) {}

  async balance(agent: AgentDoc) {
    const { chain } = this.ctx;
    const weth = this.ctx.config.wethAddress;
    // Everything in one round trip, read at one block.
    const reads = this.policies.policyReads(agent.policyAddress);
    const [p, paused, spent, last, windows, operator, epoch, usdc, eth, block, wethBalance] = await chain.readMany([
      ...reads,
      readOf(chain.usdc, "balanceOf", agent.address),
      readOf(chain.multicall, "getEthBalance", agent.address),
      readOf(chain.multicall, "getBlockNumber"),
      // The network's WETH; a network without one (swaps off) reads the block number again in its place, unused.
      weth ? readOf(WETH(weth), "balanceOf", agent.address) : readOf(chain.multicall, "getBlockNumber"),
    ]);
    if (usdc === null || eth === null || block === null) throw new Error(`could not read the balances of ${agent.address}`);
    const policy = await this.policies.fromReads(agent.policyAddress, [p, paused, spent, last, windows, operator, epoch]);
    const blockNumber = Number(block);
    const remaining = policy.dailyBudget > policy.spentToday ? policy.dailyBudget - policy.spentToday : 0n;
    return {
      agentAddress: agent.address,
      network: this.ctx.config.networkName,
      chainId: chain.chainId,
      blockNumber,
      usdc: fromBaseUnits(usdc),
      eth: formatEther(eth),
      weth: weth === null || wethBalance === null ? null : formatEther(wethBalance),
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
