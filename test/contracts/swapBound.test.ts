import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, mine, time } from "@nomicfoundation/hardhat-network-helpers";
import type { Contract } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../../src/chain/addresses";
import { maxAmountIn, meanTick, poolAddress, quoteAtTick, MAX_TICK, MIN_TICK } from "../../src/chain/uniswapMath";
import { HIGH_TOKEN, createPool, fundTrader, quoteExactOut, swapExactIn, swapExactOut, uniswapAt } from "../helpers/uniswap";
import { embeddedChainPerFile } from "../helpers/embeddedChain";

const { ethers } = hre;
const USDC = (n: bigint) => n * 10n ** 6n;
const ETH = (n: bigint) => n * 10n ** 18n;

describe("SwapBound (TWAP bound of an exactOutput swap) against the real Uniswap v3 pool", function () {
  const chain = embeddedChainPerFile();

  async function fixture() {
    const [trader, attacker, lp] = await ethers.getSigners();
    const a = chain.addresses.uniswap;
    const usdc = chain.addresses.usdc;
    const harness = (await ethers.deployContract("SwapBoundHarness")) as unknown as Contract;
    await fundTrader(a, usdc, trader, ETH(100n), USDC(1_000_000n));
    await fundTrader(a, usdc, attacker, ETH(2_000n), USDC(1_000_000n));
    return { trader, attacker, lp, a, usdc, harness, u: uniswapAt(a, trader) };
  }

  /** The bound computed off-chain from the pool's own observations: the independent twin of the library. */
  async function offChainBound(pool: string, tokenIn: string, tokenOut: string, amountOut: bigint, twapSeconds: number, bps: number) {
    const p = uniswapAt(chain.addresses.uniswap, (await ethers.getSigners())[0]).pool(pool);
    const [cumulatives] = await p.observe([twapSeconds, 0]);
    const twapTick = meanTick(cumulatives[0], cumulatives[1], twapSeconds);
    const feePips = Number(await p.fee());
    return { twapTick, bound: maxAmountIn({ twapTick, amountOut, tokenIn, tokenOut, feePips, maxSlippageBps: bps }) };
  }

  it("finds the embedded USDC/WETH pool at the factory's CREATE2 address, with a TWAP over 60 to 1800 s", async function () {
    const { a, usdc, harness, u } = await loadFixture(fixture);
    expect(await u.factory.getPool(WETH_ADDRESS, usdc, UNISWAP_POOL_FEE)).to.equal(a.usdcWethPool);
    expect(await harness.poolFor(a.factory, usdc, WETH_ADDRESS, UNISWAP_POOL_FEE)).to.equal(a.usdcWethPool);
    expect(poolAddress(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE)).to.equal(a.usdcWethPool);
    for (const w of [60, 600, 1800]) {
      const tick = Number(await harness.consult(a.usdcWethPool, w));
      // WETH is token0 (0x42.. < 0x83..): 3,000 USDC per ETH is 3e-9 in base units, a tick near -196,250.
      expect(tick).to.be.within(-196_400, -196_100);
    }
  });

  it("equals the off-chain computation for several windows, amounts and slippage allowances", async function () {
    const { a, usdc, harness } = await loadFixture(fixture);
    for (const [w, amountOut, bps] of [
      [60, USDC(1n), 0],
      [601, USDC(2_500n), 50],
      [1799, 123_456_789n, 300],
      [1800, USDC(100_000n), 10_000],
    ] as const) {
      const [maxIn, tick, pool] = await harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, amountOut, w, bps);
      const off = await offChainBound(a.usdcWethPool, WETH_ADDRESS, usdc, amountOut, w, bps);
      expect(pool).to.equal(a.usdcWethPool);
      expect(Number(tick)).to.equal(off.twapTick);
      expect(maxIn).to.equal(off.bound);
    }
    // 1 USDC at about 3,000 USDC/ETH plus 0.05%: about 0.000333 ETH.
    const [oneUsdc] = await harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, USDC(1n), 600, 0);
    expect(oneUsdc).to.be.within(330_000_000_000_000n, 336_000_000_000_000n);
  });

  it("lets an exactOutput through SwapRouter02 at the current price fit under the bound (0.5% slippage)", async function () {
    const { trader, a, usdc, harness, u } = await loadFixture(fixture);
    for (const amountOut of [USDC(5n), USDC(5_000n)]) {
      const [bound] = await harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, amountOut, 1800, 50);
      const quoted = await quoteExactOut(u.quoter, usdc, amountOut);
      expect(quoted).to.be.lte(bound);
      const wethBefore = await u.weth.balanceOf(trader.address);
      const usdcToken = await ethers.getContractAt("TestUSDC", usdc);
      const usdcBefore = await usdcToken.balanceOf(trader.address);
      await (await swapExactOut(u.router, { tokenOut: usdc, recipient: trader.address, amountOut, amountInMaximum: bound })).wait();
      const spent = wethBefore - (await u.weth.balanceOf(trader.address));
      expect(spent).to.equal(quoted);
      expect(spent).to.be.lte(bound);
      expect((await usdcToken.balanceOf(trader.address)) - usdcBefore).to.equal(amountOut);
    }
  });

  it("stays put when the spot price is pushed just before the swap (sandwich): the spot quote exceeds the bound and the router refuses", async function () {
    const { trader, attacker, a, usdc, harness, u } = await loadFixture(fixture);
    const amountOut = USDC(2_000n);
    const [before] = await harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, amountOut, 1800, 100);
    // The front-run: dump WETH for USDC, so WETH buys less USDC.
    await (await swapExactIn(u.router.connect(attacker), { tokenOut: usdc, recipient: attacker.address, amountIn: ETH(300n) })).wait();
    const [bound] = await harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, amountOut, 1800, 100);
    expect(bound).to.be.lte(before + before / 1000n); // the TWAP barely moves within one block
    const quoted = await quoteExactOut(u.quoter, usdc, amountOut);
    expect(quoted > bound, `spot ${quoted} vs bound ${bound}`).to.equal(true);
    await expect(swapExactOut(u.router, { tokenOut: usdc, recipient: trader.address, amountOut, amountInMaximum: bound })).to.be.reverted;
  });

  it("rounds the mean tick toward negative infinity for negative ticks, as OracleLibrary", async function () {
    const { a, harness } = await loadFixture(fixture);
    const p = uniswapAt(a, (await ethers.getSigners())[0]).pool(a.usdcWethPool);
    let checked = 0;
    for (const w of [7, 61, 599, 1_333, 1_799]) {
      const [c] = await p.observe([w, 0]);
      const delta = BigInt(c[1]) - BigInt(c[0]);
      const tick = Number(await harness.consult(a.usdcWethPool, w));
      expect(tick).to.equal(meanTick(c[0], c[1], w));
      if (delta % BigInt(w) !== 0n) {
        expect(tick).to.equal(Number(delta / BigInt(w)) - 1); // truncation would give one more
        checked++;
      }
    }
    expect(checked).to.be.greaterThan(0);
  });

  it("matches the off-chain bound on a pool where USDC is token0 (positive ticks)", async function () {
    const { a, usdc, harness, lp, u } = await loadFixture(fixture);
    const pool = await createPool({ a, usdc, token: HIGH_TOKEN, fee: UNISWAP_POOL_FEE, price: 2_000n, lp });
    await time.increase(900);
    await mine();
    expect(BigInt(usdc) < BigInt(HIGH_TOKEN)).to.equal(true);
    const [maxIn, tick] = await harness.maxAmountIn(a.factory, HIGH_TOKEN, usdc, UNISWAP_POOL_FEE, USDC(1_000n), 600, 50);
    expect(Number(tick)).to.be.greaterThan(0);
    const off = await offChainBound(pool, HIGH_TOKEN, usdc, USDC(1_000n), 600, 50);
    expect(maxIn).to.equal(off.bound);
    expect(Number(tick)).to.equal(off.twapTick);
    // 1,000 USDC at 2,000 USDC per token: half a token, plus fee and 0.5%.
    expect(maxIn).to.be.within(ETH(1n) / 2n, (ETH(1n) * 5030n) / 10_000n);
    const quoted = (
      await u.quoter.quoteExactOutputSingle.staticCall({
        tokenIn: HIGH_TOKEN,
        tokenOut: usdc,
        amount: USDC(1_000n),
        fee: UNISWAP_POOL_FEE,
        sqrtPriceLimitX96: 0,
      })
    ).amountIn;
    expect(quoted).to.be.lte(maxIn);
  });

  it("quotes like the off-chain OracleLibrary at extreme, negative and positive ticks in both token orders", async function () {
    const { harness, usdc } = await loadFixture(fixture);
    const ticks = [MIN_TICK, -443_637, -196_257, -1, 0, 1, 196_257, 443_636, 443_637, MAX_TICK];
    for (const tick of ticks) {
      for (const [base, quote] of [
        [WETH_ADDRESS, usdc],
        [usdc, WETH_ADDRESS],
      ]) {
        for (const amount of [1n, USDC(1_000n), 2n ** 128n - 1n]) {
          expect(await harness.getQuoteAtTick(tick, amount, base, quote), `tick ${tick} amount ${amount}`).to.equal(
            quoteAtTick(tick, amount, base, quote),
          );
        }
      }
    }
  });

  it("refuses a pool too young for the window (Uniswap's OLD) with SwapBoundTwapUnavailable", async function () {
    const { a, usdc, harness, lp } = await loadFixture(fixture);
    const pool = await createPool({ a, usdc, token: WETH_ADDRESS, fee: 3_000, price: 3_000n, lp });
    await expect(harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, 3_000, USDC(10n), 60, 50))
      .to.be.revertedWithCustomError(harness, "SwapBoundTwapUnavailable")
      .withArgs(pool, 60);
    await time.increase(120);
    await mine();
    const [maxIn] = await harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, 3_000, USDC(10n), 60, 50);
    expect(maxIn).to.equal((await offChainBound(pool, WETH_ADDRESS, usdc, USDC(10n), 60, 50)).bound);
  });

  it("refuses a zero window, a fee tier without a pool and an amount beyond uint128 with their own errors", async function () {
    const { a, usdc, harness } = await loadFixture(fixture);
    await expect(harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, USDC(1n), 0, 50)).to.be.revertedWithCustomError(
      harness,
      "SwapBoundZeroWindow",
    );
    const missing = poolAddress(a.factory, WETH_ADDRESS, usdc, 100);
    await expect(harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, 100, USDC(1n), 60, 50))
      .to.be.revertedWithCustomError(harness, "SwapBoundNoPool")
      .withArgs(missing);
    await expect(harness.maxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, 2n ** 128n, 60, 50))
      .to.be.revertedWithCustomError(harness, "SwapBoundAmountTooLarge")
      .withArgs(2n ** 128n);
  });
});
