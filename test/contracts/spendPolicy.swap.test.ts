import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { ZeroAddress } from "ethers";
import { WETH_ADDRESS } from "../../src/chain/addresses";
import { NO_SWAPS } from "../../src/chain/deploy";
import { quoteSwap } from "../../src/chain/swapQuote";
import { SWAP_POLICY, ETH, swapFixture } from "../helpers/swapFixture";
import { embeddedChainPerFile } from "../helpers/embeddedChain";
import { wethForUsdc } from "../helpers/uniswap";
import {
  DEFAULT_POLICY,
  deployBareFactory,
  deployTestFactory,
  nextTimestamp,
  signSetPaused,
  signTransfer,
  usdc,
} from "../helpers/policyFixture";

const { ethers } = hre;

describe("SpendPolicy swapForPayment: WETH or ETH into one payment's USDC shortfall, on the real Uniswap v3", function () {
  const chain = embeddedChainPerFile({ keepClock: true });

  const fixture = () => swapFixture(chain);
  const quote = (amountOut: bigint) =>
    quoteSwap(
      ethers.provider,
      wethForUsdc(chain, amountOut, {
        twapSeconds: Number(SWAP_POLICY.swapTwapSeconds),
        maxSlippageBps: Number(SWAP_POLICY.maxSwapSlippageBps),
      }),
    );

  it("buys exactly the shortfall with WETH at QuoterV2's price, within the TWAP bound, leaves no allowance, and the payment settles", async function () {
    const f = await loadFixture(fixture);
    await f.giveWeth(ETH(1n));
    await (await f.token.connect(f.trader).transfer(f.agent, usdc("0.5"))).wait();
    const { id, transfer } = await f.authorize(usdc(2));
    const q = await quote(usdc("1.5"));
    if (!q.ok) throw new Error("quote refused");
    const before = await f.balances();
    const receipt = await f.swap(id);
    const swapped = f.eventsOf(receipt).find((e) => e.name === "SwapExecuted")!;
    const after = await f.balances();
    expect(after.usdc).to.equal(usdc(2));
    expect(before.weth - after.weth).to.equal(q.quote.amountIn);
    expect(q.quote.amountIn <= q.quote.maxAmountIn).to.equal(true);
    expect([...swapped.args]).to.deep.equal([id, f.agent, WETH_ADDRESS, q.quote.amountIn, usdc("1.5")]);
    expect(after.eth).to.equal(before.eth);
    const allowance = new ethers.Contract(WETH_ADDRESS, ["function allowance(address,address) view returns (uint256)"], ethers.provider);
    expect(await allowance.allowance(f.agent, f.a.swapRouter02)).to.equal(0n);
    expect(await f.wallet.paymentState(id)).to.equal(1n);

    const sig = await signTransfer(f.agentKey, f.token, f.agent, id, transfer);
    await (
      await f.token["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
        f.agent,
        transfer.payTo,
        transfer.amount,
        transfer.validAfter,
        transfer.validBefore,
        id,
        sig,
      )
    ).wait();
    expect(await f.token.balanceOf(f.merchant.address)).to.equal(usdc(2));
    expect(await f.token.balanceOf(f.agent)).to.equal(0n);
  });

  it("wraps only as much of the wallet's ETH as it needs (its WETH first) and reports tokenIn 0x0", async function () {
    const f = await loadFixture(fixture);
    await f.giveEth(ETH(1n));
    const small = 10n ** 14n; // 0.0001 WETH: less than 2 USDC's worth
    await f.giveWeth(small);
    const { id } = await f.authorize(usdc(2));
    const q = await quote(usdc(2));
    if (!q.ok) throw new Error("quote refused");
    const before = await f.balances();
    const swapped = f.eventsOf(await f.swap(id)).find((e) => e.name === "SwapExecuted")!;
    const after = await f.balances();
    expect(after.usdc).to.equal(usdc(2));
    expect(after.weth).to.equal(0n);
    expect(before.eth - after.eth).to.equal(q.quote.amountIn - small);
    expect([...swapped.args]).to.deep.equal([id, f.agent, ZeroAddress, q.quote.amountIn, usdc(2)]);
  });

  it("blocks the payment with swap_slippage_exceeded (13) and releases it when the price was pushed before the swap: nothing spent", async function () {
    const f = await loadFixture(fixture);
    await f.giveWeth(ETH(1n));
    await f.giveEth(ETH(1n));
    const { id, transfer } = await f.authorize(usdc(2));
    const spentBefore = await f.wallet.spentToday();
    await f.dumpWeth(ETH(100n));
    const before = await f.balances();
    const receipt = await f.swap(id);
    const events = f.eventsOf(receipt);
    expect(events.map((e) => e.name)).to.deep.equal(["PaymentBlocked", "PaymentReleased"]);
    expect(events[0].args.reason).to.equal(13n);
    expect(events[0].args.merchant).to.equal("api.example.com");
    expect(events[1].args.amount).to.equal(usdc(2));
    expect(await f.balances()).to.deep.equal(before);
    expect(await f.wallet.paymentState(id)).to.equal(0n);
    expect(await f.wallet.spentToday()).to.equal(spentBefore - usdc(2));
    const allowance = new ethers.Contract(WETH_ADDRESS, ["function allowance(address,address) view returns (uint256)"], ethers.provider);
    expect(await allowance.allowance(f.agent, f.a.swapRouter02)).to.equal(0n);
    // The authorisation is dead: its transfer can never settle.
    const sig = await signTransfer(f.agentKey, f.token, f.agent, id, transfer);
    expect(await f.wallet.isValidSignature(await f.wallet.transferDigest(id, transfer), sig)).to.equal("0xffffffff");
  });

  it("refuses while paused, with swaps off in the policy, for an expired transfer, and on a deployment without Uniswap", async function () {
    const f = await loadFixture(fixture);
    await f.giveWeth(ETH(1n));
    const { id } = await f.authorize(usdc(1), { validFor: 60n });
    await f.setPolicy({ ...SWAP_POLICY, maxSwapSlippageBps: 0n });
    await expect(f.swap(id)).to.be.revertedWithCustomError(f.wallet, "SpendPolicySwapsDisabled");
    await f.setPolicy({ ...SWAP_POLICY, swapTwapSeconds: 0n });
    await expect(f.swap(id)).to.be.revertedWithCustomError(f.wallet, "SpendPolicySwapsDisabled");
    await f.setPolicy(SWAP_POLICY);
    let ts = await nextTimestamp();
    await (await f.wallet.connect(f.other).setPaused(true, 0n, ts, await signSetPaused(f.owner, f.agent, f.agent, true, ts))).wait();
    await expect(f.swap(id)).to.be.revertedWithCustomError(f.wallet, "SpendPolicySwapsDisabled");
    ts = await nextTimestamp();
    const epoch = await f.wallet.epoch();
    await (
      await f.wallet.connect(f.other).setPaused(false, epoch, ts, await signSetPaused(f.owner, f.agent, f.agent, false, ts, epoch))
    ).wait();
    await hre.network.provider.request({ method: "evm_increaseTime", params: [120] });
    await expect(f.swap(id)).to.be.revertedWithCustomError(f.wallet, "SpendPolicyInvalidTransfer");

    const [deployer, operator] = await ethers.getSigners();
    const plain = await deployTestFactory(deployer, operator.address, chain.addresses.usdc);
    const impl = await ethers.getContractAt("SpendPolicy", await plain.implementation());
    expect([...(await impl.swapConfig())]).to.deep.equal(NO_SWAPS);
    expect([...(await f.wallet.swapConfig())]).to.deep.equal([f.a.swapRouter02, WETH_ADDRESS, f.a.factory]);
    // All three or none: a half-configured implementation could not be trusted to bound anything.
    const bare = await deployBareFactory(deployer, chain.addresses.usdc);
    const { bytecode } = await hre.artifacts.readArtifact("SpendPolicy");
    await expect(bare.configure(bytecode, operator.address, f.a.swapRouter02, ZeroAddress, f.a.factory)).to.be.revertedWithCustomError(
      bare,
      "SpendPolicyFactoryWrongImplementation",
    );
    expect(DEFAULT_POLICY.maxSwapSlippageBps).to.equal(0n);
  });
});
