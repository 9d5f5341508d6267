/**
 * Uniswap v3 price math in bigint, written from the v3-core and v3-periphery sources (TickMath, FullMath,
 * OracleLibrary, PoolAddress): the off-chain twin of contracts/swap/SwapBound.sol, so the service can refuse a swap
 * the wallet would refuse, before sending anything.
 */
import { AbiCoder, getAddress, getCreate2Address, keccak256 } from "ethers";

export const MIN_TICK = -887272;
export const MAX_TICK = 887272;
const Q96 = 2n ** 96n;
const Q128 = 2n ** 128n;
const Q192 = 2n ** 192n;
const MAX_UINT128 = 2n ** 128n - 1n;
const MAX_UINT256 = 2n ** 256n - 1n;

/** keccak256 of UniswapV3Pool's creation code, as in v3-periphery's PoolAddress (the same on Base). */
export const POOL_INIT_CODE_HASH = "0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54";

/** One hundredth of a basis point: the unit of a pool's fee (500 = 0.05%). */
export const FEE_PIPS = 1_000_000n;
export const BPS = 10_000n;

/** floor(a * b / d), as FullMath.mulDiv (which reverts when the result overflows 256 bits). */
export function mulDiv(a: bigint, b: bigint, d: bigint): bigint {
  if (d === 0n) throw new RangeError("mulDiv: division by zero");
  const r = (a * b) / d;
  if (r > MAX_UINT256) throw new RangeError("mulDiv: overflow");
  return r;
}

/** TickMath.getSqrtRatioAtTick: sqrt(1.0001^tick) * 2^96, bit for bit. */
export function sqrtRatioAtTick(tick: number): bigint {
  if (!Number.isInteger(tick) || tick < MIN_TICK || tick > MAX_TICK) throw new RangeError(`tick out of range: ${tick}`);
  const absTick = BigInt(Math.abs(tick));
  let ratio = (absTick & 0x1n) !== 0n ? 0xfffcb933bd6fad37aa2d162d1a594001n : 0x100000000000000000000000000000000n;
  const steps: [bigint, bigint][] = [
    [0x2n, 0xfff97272373d413259a46990580e213an],
    [0x4n, 0xfff2e50f5f656932ef12357cf3c7fdccn],
    [0x8n, 0xffe5caca7e10e4e61c3624eaa0941cd0n],
    [0x10n, 0xffcb9843d60f6159c9db58835c926644n],
    [0x20n, 0xff973b41fa98c081472e6896dfb254c0n],
    [0x40n, 0xff2ea16466c96a3843ec78b326b52861n],
    [0x80n, 0xfe5dee046a99a2a811c461f1969c3053n],
    [0x100n, 0xfcbe86c7900a88aedcffc83b479aa3a4n],
    [0x200n, 0xf987a7253ac413176f2b074cf7815e54n],
    [0x400n, 0xf3392b0822b70005940c7a398e4b70f3n],
    [0x800n, 0xe7159475a2c29b7443b29c7fa6e889d9n],
    [0x1000n, 0xd097f3bdfd2022b8845ad8f792aa5825n],
    [0x2000n, 0xa9f746462d870fdf8a65dc1f90e061e5n],
    [0x4000n, 0x70d869a156d2a1b890bb3df62baf32f7n],
    [0x8000n, 0x31be135f97d08fd981231505542fcfa6n],
    [0x10000n, 0x9aa508b5b7a84e1c677de54f3e99bc9n],
    [0x20000n, 0x5d6af8dedb81196699c329225ee604n],
    [0x40000n, 0x2216e584f5fa1ea926041bedfe98n],
    [0x80000n, 0x48a170391f7dc42444e8fa2n],
  ];
  for (const [bit, factor] of steps) if ((absTick & bit) !== 0n) ratio = (ratio * factor) >> 128n;
  if (tick > 0) ratio = MAX_UINT256 / ratio;
  // Q128.128 to Q64.96, rounding up so that getTickAtSqrtRatio of the result is consistent.
  return (ratio >> 32n) + (ratio % (1n << 32n) === 0n ? 0n : 1n);
}

/** OracleLibrary.getQuoteAtTick: how much `quoteToken` `baseAmount` of `baseToken` is worth at `tick` (rounded down). */
export function quoteAtTick(tick: number, baseAmount: bigint, baseToken: string, quoteToken: string): bigint {
  if (baseAmount < 0n || baseAmount > MAX_UINT128) throw new RangeError("baseAmount must fit in uint128");
  const sqrtRatioX96 = sqrtRatioAtTick(tick);
  const baseIsToken0 = BigInt(baseToken) < BigInt(quoteToken);
  if (sqrtRatioX96 <= MAX_UINT128) {
    const ratioX192 = sqrtRatioX96 * sqrtRatioX96;
    return baseIsToken0 ? mulDiv(ratioX192, baseAmount, Q192) : mulDiv(Q192, baseAmount, ratioX192);
  }
  const ratioX128 = mulDiv(sqrtRatioX96, sqrtRatioX96, 1n << 64n);
  return baseIsToken0 ? mulDiv(ratioX128, baseAmount, Q128) : mulDiv(Q128, baseAmount, ratioX128);
}

/** OracleLibrary.consult's arithmetic mean tick from two tick cumulatives `secondsAgo` apart, rounded toward -inf. */
export function meanTick(tickCumulativeThen: bigint, tickCumulativeNow: bigint, secondsAgo: number): number {
  if (!Number.isInteger(secondsAgo) || secondsAgo <= 0) throw new RangeError("secondsAgo must be a positive integer");
  const delta = tickCumulativeNow - tickCumulativeThen;
  const s = BigInt(secondsAgo);
  let tick = delta / s; // bigint division truncates toward zero, as Solidity's
  if (delta < 0n && delta % s !== 0n) tick -= 1n;
  return Number(tick);
}

/**
 * The most `tokenIn` an exactOutput swap of `amountOut` may spend: the TWAP quote, grossed up by the pool fee
 * (which Uniswap charges on the input: in = net * 1e6 / (1e6 - fee)) and by `maxSlippageBps`. Each division
 * rounds down, so rounding never widens the bound.
 */
export function maxAmountIn(args: {
  twapTick: number;
  amountOut: bigint;
  tokenIn: string;
  tokenOut: string;
  feePips: number;
  maxSlippageBps: number;
}): bigint {
  const { twapTick, amountOut, tokenIn, tokenOut, feePips, maxSlippageBps } = args;
  if (!Number.isInteger(feePips) || feePips < 0 || BigInt(feePips) >= FEE_PIPS) throw new RangeError("fee out of range");
  if (!Number.isInteger(maxSlippageBps) || maxSlippageBps < 0 || maxSlippageBps > 65_535) {
    throw new RangeError("maxSlippageBps out of range");
  }
  const atTwap = quoteAtTick(twapTick, amountOut, tokenOut, tokenIn);
  const withFee = mulDiv(atTwap, FEE_PIPS, FEE_PIPS - BigInt(feePips));
  return mulDiv(withFee, BPS + BigInt(maxSlippageBps), BPS);
}

/** sqrtPriceX96 for a price of `quotePerBase` whole quote tokens per whole base token (for pool initialisation). */
export function sqrtPriceX96For(args: {
  base: { address: string; decimals: number };
  quote: { address: string; decimals: number };
  quotePerBase: bigint;
}): bigint {
  const { base, quote, quotePerBase } = args;
  // Raw ratio token1/token0 in base units, as a fraction num/den.
  const baseUnits = 10n ** BigInt(base.decimals);
  const quoteUnits = quotePerBase * 10n ** BigInt(quote.decimals);
  const baseIsToken0 = BigInt(base.address) < BigInt(quote.address);
  const [num, den] = baseIsToken0 ? [quoteUnits, baseUnits] : [baseUnits, quoteUnits];
  return sqrt((num * Q96 * Q96) / den);
}

function sqrt(n: bigint): bigint {
  if (n < 2n) return n;
  let x = n;
  let y = (x + 1n) / 2n;
  while (y < x) {
    x = y;
    y = (x + n / x) / 2n;
  }
  return x;
}

/** The v3 pool of two tokens and a fee tier, as PoolAddress.computeAddress (CREATE2 from the factory). */
export function poolAddress(factory: string, tokenA: string, tokenB: string, feePips: number): string {
  const [token0, token1] = BigInt(tokenA) < BigInt(tokenB) ? [tokenA, tokenB] : [tokenB, tokenA];
  const salt = keccak256(AbiCoder.defaultAbiCoder().encode(["address", "address", "uint24"], [token0, token1, feePips]));
  return getAddress(getCreate2Address(factory, salt, POOL_INIT_CODE_HASH));
}
