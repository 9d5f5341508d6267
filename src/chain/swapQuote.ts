/**
 * The off-chain side of a swap before settlement: QuoterV2's price for buying exactly `amountOut` USDC, and the
 * same TWAP bound the wallet enforces on-chain (contracts/swap/SwapBound.sol), so POST /pay can refuse with
 * `swap_slippage_exceeded` before it sends anything. The chain stays the judge: the bound is computed again there.
 */
import { Contract, isCallException, type ContractRunner } from "ethers";
import { ARTIFACTS, uniswapArtifact } from "./uniswapArtifacts";
import { maxAmountIn, meanTick, poolAddress } from "./uniswapMath";

export interface SwapQuoteRequest {
  factory: string;
  quoterV2: string;
  tokenIn: string;
  tokenOut: string;
  /** Pool fee tier in hundredths of a basis point (500 = 0.05%). */
  fee: number;
  amountOut: bigint;
  twapSeconds: number;
  maxSlippageBps: number;
}

export interface SwapQuote {
  pool: string;
  /** What QuoterV2 says the swap costs now. */
  amountIn: bigint;
  /** The most the wallet will let it cost: TWAP quote + fee + slippage. */
  maxAmountIn: bigint;
  twapTick: number;
  sqrtPriceX96After: bigint;
  gasEstimate: bigint;
}

export type SwapQuoteResult =
  | { ok: true; quote: SwapQuote }
  | { ok: false; reason: "swap_slippage_exceeded"; quote: SwapQuote }
  /** No pool, a pool younger than the TWAP window, or not enough liquidity to quote. */
  | { ok: false; reason: "swap_unavailable"; detail: string };

const POOL_ABI = [
  "function observe(uint32[] secondsAgos) view returns (int56[] tickCumulatives, uint160[] secondsPerLiquidityCumulativeX128s)",
];

/** The pool's arithmetic-mean tick over the last `twapSeconds` (rounded toward -inf), or null when it has no such history. */
export async function readTwapTick(runner: ContractRunner, pool: string, twapSeconds: number): Promise<number | null> {
  try {
    const [tickCumulatives] = (await new Contract(pool, POOL_ABI, runner).observe([twapSeconds, 0])) as [bigint[]];
    return meanTick(tickCumulatives[0], tickCumulatives[1], twapSeconds);
  } catch (err) {
    if (isCallException(err) && err.reason === "OLD") return null;
    throw err;
  }
}

/** QuoterV2.quoteExactOutputSingle through eth_call (the quoter reverts internally to measure, so it is not a view). */
export async function quoteExactOutputSingle(
  runner: ContractRunner,
  quoterV2: string,
  p: { tokenIn: string; tokenOut: string; fee: number; amountOut: bigint },
): Promise<{ amountIn: bigint; sqrtPriceX96After: bigint; gasEstimate: bigint }> {
  const quoter = new Contract(quoterV2, uniswapArtifact(ARTIFACTS.quoterV2).abi, runner);
  const r = await quoter.quoteExactOutputSingle.staticCall({
    tokenIn: p.tokenIn,
    tokenOut: p.tokenOut,
    amount: p.amountOut,
    fee: p.fee,
    sqrtPriceLimitX96: 0,
  });
  return { amountIn: r.amountIn as bigint, sqrtPriceX96After: r.sqrtPriceX96After as bigint, gasEstimate: r.gasEstimate as bigint };
}

/** Quotes the swap and checks it against the TWAP bound, as the wallet will. */
export async function quoteSwap(runner: ContractRunner, req: SwapQuoteRequest): Promise<SwapQuoteResult> {
  if (!Number.isInteger(req.twapSeconds) || req.twapSeconds <= 0 || req.twapSeconds > 0xffffffff) {
    return { ok: false, reason: "swap_unavailable", detail: "the TWAP window must be a whole number of seconds, at least one" };
  }
  if (req.amountOut <= 0n || req.amountOut >= 2n ** 128n) {
    return { ok: false, reason: "swap_unavailable", detail: "the amount must be above 0 and fit in uint128" };
  }
  const pool = poolAddress(req.factory, req.tokenIn, req.tokenOut, req.fee);
  const provider = runner.provider;
  if (provider && (await provider.getCode(pool)) === "0x") {
    return { ok: false, reason: "swap_unavailable", detail: `no pool for this pair and fee tier (${pool})` };
  }
  const [twapTick, spot] = await Promise.all([
    readTwapTick(runner, pool, req.twapSeconds),
    quoteExactOutputSingle(runner, req.quoterV2, req).catch((err: unknown) => {
      if (isCallException(err)) return null; // e.g. not enough liquidity for that amount
      throw err;
    }),
  ]);
  if (twapTick === null) {
    return { ok: false, reason: "swap_unavailable", detail: `the pool has no price history over ${req.twapSeconds} s` };
  }
  if (spot === null) return { ok: false, reason: "swap_unavailable", detail: "QuoterV2 cannot quote this amount" };
  const bound = maxAmountIn({
    twapTick,
    amountOut: req.amountOut,
    tokenIn: req.tokenIn,
    tokenOut: req.tokenOut,
    feePips: req.fee,
    maxSlippageBps: req.maxSlippageBps,
  });
  const quote: SwapQuote = {
    pool,
    amountIn: spot.amountIn,
    maxAmountIn: bound,
    twapTick,
    sqrtPriceX96After: spot.sqrtPriceX96After,
    gasEstimate: spot.gasEstimate,
  };
  return spot.amountIn <= bound ? { ok: true, quote } : { ok: false, reason: "swap_slippage_exceeded", quote };
}
