import { expect } from "chai";
import { WETH_ADDRESS } from "../../src/chain/addresses";
import { MAX_TICK, MIN_TICK, maxAmountIn, meanTick, quoteAtTick, sqrtPriceX96For, sqrtRatioAtTick } from "../../src/chain/uniswapMath";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const HIGH = "0xFFfFfFffFFfffFFfFFfFFFFFffFFFffffFfFFFfF";

describe("uniswapMath (the off-chain twin of SwapBound)", function () {
  it("gives TickMath's known values at the edges and 1.0001^(tick/2) in between", function () {
    expect(sqrtRatioAtTick(0)).to.equal(2n ** 96n);
    expect(sqrtRatioAtTick(MIN_TICK)).to.equal(4295128739n);
    expect(sqrtRatioAtTick(MAX_TICK)).to.equal(1461446703485210103287273052203988822378723970342n);
    for (const tick of [-200_000, -1, 1, 50_000, 200_000]) {
      const exact = Math.pow(1.0001, tick / 2) * 2 ** 96;
      expect(Number(sqrtRatioAtTick(tick)) / exact).to.be.closeTo(1, 1e-9); // the float side is the less precise one
    }
    expect(() => sqrtRatioAtTick(MAX_TICK + 1)).to.throw(RangeError);
    expect(() => sqrtRatioAtTick(0.5)).to.throw(RangeError);
  });

  it("rounds the mean tick toward negative infinity, as OracleLibrary.consult", function () {
    expect(meanTick(0n, -7n, 2)).to.equal(-4); // -3.5: truncation would say -3
    expect(meanTick(0n, -8n, 2)).to.equal(-4);
    expect(meanTick(0n, 7n, 2)).to.equal(3);
    expect(meanTick(100n, -1_177_541_923n, 6_000)).to.equal(-196_258); // -196,257.0038...
    expect(meanTick(-1_177_541_923n, 100n, 6_000)).to.equal(196_257);
    expect(() => meanTick(0n, 1n, 0)).to.throw(RangeError);
  });

  it("prices WETH/USDC where the pool would (token order and decimals), both ways", function () {
    const sqrtP = sqrtPriceX96For({
      base: { address: WETH_ADDRESS, decimals: 18 },
      quote: { address: USDC, decimals: 6 },
      quotePerBase: 3_000n,
    });
    // token1/token0 = USDC units per wei = 3e-9
    expect(Number(sqrtP * sqrtP) / 2 ** 192).to.be.closeTo(3e-9, 1e-20);
    const highFirst = sqrtPriceX96For({
      base: { address: HIGH, decimals: 18 },
      quote: { address: USDC, decimals: 6 },
      quotePerBase: 3_000n,
    });
    expect(Number(highFirst * highFirst) / 2 ** 192).to.be.closeTo(1 / 3e-9, 1); // USDC is token0 here
    const tick = -196_257; // about 3,000 USDC per ETH
    expect(Number(quoteAtTick(tick, 10n ** 18n, WETH_ADDRESS, USDC)) / 1e6).to.be.closeTo(3_000, 1);
    expect(Number(quoteAtTick(tick, 3_000n * 10n ** 6n, USDC, WETH_ADDRESS)) / 1e18).to.be.closeTo(1, 0.001);
  });

  it("grosses the TWAP quote up by the fee on the input and the slippage, never rounding up", function () {
    const base = { twapTick: -196_257, amountOut: 1_000n * 10n ** 6n, tokenIn: WETH_ADDRESS, tokenOut: USDC };
    const atTwap = quoteAtTick(base.twapTick, base.amountOut, USDC, WETH_ADDRESS);
    expect(maxAmountIn({ ...base, feePips: 0, maxSlippageBps: 0 })).to.equal(atTwap);
    expect(maxAmountIn({ ...base, feePips: 500, maxSlippageBps: 0 })).to.equal((atTwap * 1_000_000n) / 999_500n);
    expect(maxAmountIn({ ...base, feePips: 500, maxSlippageBps: 100 })).to.equal((((atTwap * 1_000_000n) / 999_500n) * 10_100n) / 10_000n);
    // 1 wei of USDC-for-WETH at this price is worth less than a unit: the bound is 0, not 1.
    expect(maxAmountIn({ ...base, amountOut: 1n, tokenIn: USDC, tokenOut: WETH_ADDRESS, feePips: 500, maxSlippageBps: 0 })).to.equal(0n);
    expect(() => maxAmountIn({ ...base, feePips: 1_000_000, maxSlippageBps: 0 })).to.throw(RangeError);
    expect(() => maxAmountIn({ ...base, feePips: 500, maxSlippageBps: 70_000 })).to.throw(RangeError);
  });
});
