/**
 * An agent wallet built with the real embedded Uniswap v3 (SwapRouter02, WETH9 at Base's address, the USDC/WETH
 * 0.05% pool with an hour of history) for the swap tests on the contracts: a factory whose implementation knows the
 * router, an agent whose owner-signed policy allows swaps, a trader who can move the pool, and builders for
 * authorised payments. The caller starts the embedded chain (startEmbeddedChain) once per file.
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { Contract, type Signer } from "ethers";
import { WETH_ADDRESS } from "../../src/chain/addresses";
import type { EmbeddedChain } from "../../src/dev/embeddedChain";
import {
  ALLOWLIST,
  DEFAULT_POLICY,
  type PolicyValues,
  deployAgentFor,
  deployTestFactory,
  nextTimestamp,
  paymentId,
  proofFor,
  signSetPolicy,
  transferOf,
  usdc,
  type TransferValues,
} from "./policyFixture";
import { TOKEN_ABI, fundTrader, swapExactIn, uniswapAt } from "./uniswap";

const { ethers } = hre;

export const ETH = (n: bigint) => n * 10n ** 18n;
/** Swaps on: 1% over the 10-minute TWAP. */
export const SWAP_POLICY: PolicyValues = { ...DEFAULT_POLICY, maxSwapSlippageBps: 100n, swapTwapSeconds: 600n };
export const MERCHANT = "api.example.com";

/**
 * Reverts to `snapshot` and brings the clock level with the owner timestamps this file issued (nextTimestamp keeps
 * issuing above them): later files' fixtures would otherwise sign policies dated ahead of their chain.
 */
export async function revertKeepingClock(snapshot: string): Promise<void> {
  await hre.network.provider.request({ method: "evm_revert", params: [snapshot] });
  await time.increaseTo(await nextTimestamp());
}

export async function swapFixture(chain: EmbeddedChain, policy: PolicyValues = SWAP_POLICY) {
  const [deployer, operator, owner, other, trader, merchant] = await ethers.getSigners();
  const a = chain.addresses.uniswap;
  const token = await ethers.getContractAt("TestUSDC", chain.addresses.usdc);
  const factory = await deployTestFactory(deployer, operator.address, chain.addresses.usdc, [a.swapRouter02, a.weth, a.factory]);
  const agentKey = ethers.Wallet.createRandom();
  const wallet = await deployAgentFor(factory, operator, agentKey.address, owner.address, owner, policy);
  const agent = await wallet.getAddress();
  const weth = new Contract(WETH_ADDRESS, TOKEN_ABI, trader);
  await fundTrader(a, chain.addresses.usdc, trader, ETH(500n), usdc(1_000_000));
  const u = uniswapAt(a, trader);
  const pool = u.pool(a.usdcWethPool);
  const transfers = new Map<string, TransferValues>();

  /** Gives the agent wallet `amount` WETH (wrapped by the trader). */
  async function giveWeth(amount: bigint) {
    await (await weth.transfer(agent, amount)).wait();
  }
  /** Sends the agent wallet `amount` ETH. */
  async function giveEth(amount: bigint) {
    await (await trader.sendTransaction({ to: agent, value: amount })).wait();
  }
  /** authorizePayment of `amount` USDC to the merchant; returns the id and its transfer. */
  async function authorize(amount: bigint, opts: { from?: Signer; validFor?: bigint } = {}) {
    const { leaf, proof } = proofFor(ALLOWLIST, MERCHANT);
    const transfer = await transferOf(amount, merchant.address, opts.validFor ?? 600n);
    const id = paymentId();
    transfers.set(id, transfer);
    const NO = { approvalId: "", amount: 0n, timestamp: 0n, signature: "0x" };
    await (await wallet.connect(opts.from ?? operator).authorizePayment(id, MERCHANT, leaf, proof, transfer, NO)).wait();
    return { id, transfer };
  }
  /** swapForPayment from the operator; resolves to the mined receipt. */
  async function swap(id: string, opts: { from?: Signer; transfer?: TransferValues; merchant?: string } = {}) {
    const transfer = opts.transfer ?? transfers.get(id)!;
    const tx = await wallet.connect(opts.from ?? operator).swapForPayment(id, opts.merchant ?? MERCHANT, transfer, { gasLimit: 1_000_000 });
    return (await tx.wait())!;
  }
  /** Events of the wallet in a receipt, parsed. */
  function eventsOf(receipt: { logs: readonly { address: string; topics: readonly string[]; data: string }[] }) {
    return receipt.logs
      .filter((l) => l.address.toLowerCase() === agent.toLowerCase())
      .map((l) => wallet.interface.parseLog({ topics: [...l.topics], data: l.data })!)
      .filter(Boolean);
  }
  /**
   * Sells `amountIn` WETH for USDC from the trader: pushes the WETH price down (a sandwich's first leg). Resolves to
   * the back-run, which sells the USDC it got back into the pool (the price returns to about where it was).
   */
  async function dumpWeth(amountIn: bigint) {
    const got = await token.balanceOf(trader.address);
    const trade = (tokenIn: string, tokenOut: string, amount: bigint) =>
      swapExactIn(u.router, { tokenIn, tokenOut, recipient: trader.address, amountIn: amount });
    await (await trade(WETH_ADDRESS, chain.addresses.usdc, amountIn)).wait();
    const bought = (await token.balanceOf(trader.address)) - got;
    return async () => {
      await (await trade(chain.addresses.usdc, WETH_ADDRESS, bought)).wait();
    };
  }
  /** Replaces the policy (owner-signed, relayed by `other`). */
  async function setPolicy(values: PolicyValues) {
    const timestamp = await nextTimestamp();
    const signature = await signSetPolicy(owner, agent, agent, values, timestamp);
    await (await wallet.connect(other).updatePolicy(values, timestamp, signature)).wait();
  }
  const balances = async () => ({
    usdc: await token.balanceOf(agent),
    weth: (await weth.balanceOf(agent)) as bigint,
    eth: await ethers.provider.getBalance(agent),
  });
  return {
    a,
    token,
    factory,
    wallet,
    agent,
    agentKey,
    deployer,
    operator,
    owner,
    other,
    trader,
    merchant,
    weth,
    u,
    pool,
    giveWeth,
    giveEth,
    authorize,
    swap,
    eventsOf,
    dumpWeth,
    setPolicy,
    balances,
    transfers,
  };
}
