/** Uniswap v3 handles for tests on the embedded chain: the published artifacts' contracts, a trader, extra pools. */
import hre from "hardhat";
import { Contract, MaxUint256, getAddress, type BaseContract, type ContractTransactionResponse, type Signer } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../../src/chain/addresses";
import { ARTIFACTS, uniswapArtifact } from "../../src/chain/uniswapArtifacts";
import type { UniswapAddresses } from "../../src/dev/uniswap";
import { poolAddress, sqrtPriceX96For } from "../../src/chain/uniswapMath";

export const TOKEN_ABI = [
  "function approve(address spender, uint256 amount) returns (bool)",
  "function balanceOf(address) view returns (uint256)",
  "function mint(address to, uint256 amount) returns (bool)",
  "function deposit() payable",
  "function transfer(address to, uint256 amount) returns (bool)",
];

/** An 18-decimal token above USDC's address, so that USDC is token0 of its pool (WETH9's code, placed there). */
export const HIGH_TOKEN = getAddress("0xffffffffffffffffffffffffffffffffffff0001");

export function uniswapAt(a: UniswapAddresses, runner: Signer) {
  return {
    factory: new Contract(a.factory, uniswapArtifact(ARTIFACTS.factory).abi, runner),
    router: new Contract(a.swapRouter02, uniswapArtifact(ARTIFACTS.swapRouter02).abi, runner),
    quoter: new Contract(a.quoterV2, uniswapArtifact(ARTIFACTS.quoterV2).abi, runner),
    npm: new Contract(a.positionManager, uniswapArtifact(ARTIFACTS.positionManager).abi, runner),
    pool: (address: string) => new Contract(address, uniswapArtifact(ARTIFACTS.pool).abi, runner),
    weth: new Contract(WETH_ADDRESS, TOKEN_ABI, runner),
  };
}

/** Gives `trader` WETH (wrapped from its ETH) and minted USDC, approved to the router and the position manager. */
export async function fundTrader(a: UniswapAddresses, usdc: string, trader: Signer, weth: bigint, usdcAmount: bigint): Promise<void> {
  const me = await trader.getAddress();
  const w = new Contract(WETH_ADDRESS, TOKEN_ABI, trader);
  const u = new Contract(usdc, TOKEN_ABI, trader);
  if (weth > 0n) await (await w.deposit({ value: weth })).wait();
  if (usdcAmount > 0n) await (await u.mint(me, usdcAmount)).wait();
  for (const t of [w, u]) {
    for (const spender of [a.swapRouter02, a.positionManager]) await (await t.approve(spender, MaxUint256)).wait();
  }
}

/**
 * A new pool of `usdc` and an 18-decimal token (at `price` USDC per token), with liquidity around that price
 * from `lp` (funded here). Returns its address; its history starts now.
 */
export async function createPool(opts: {
  a: UniswapAddresses;
  usdc: string;
  token: string;
  fee: number;
  price: bigint;
  lp: Signer;
}): Promise<string> {
  const { a, usdc, token, fee, price, lp } = opts;
  const me = await lp.getAddress();
  if (token !== WETH_ADDRESS && (await hre.ethers.provider.getCode(token)) === "0x") {
    const weth9 = await hre.artifacts.readArtifact("WETH9");
    await hre.network.provider.request({ method: "hardhat_setCode", params: [token, weth9.deployedBytecode] });
  }
  const t = new Contract(token, TOKEN_ABI, lp);
  const u = new Contract(usdc, TOKEN_ABI, lp);
  const tokenAmount = 1_000n * 10n ** 18n;
  const usdcAmount = 1_000n * price * 10n ** 6n;
  await (await t.deposit({ value: tokenAmount })).wait();
  await (await u.mint(me, usdcAmount)).wait();
  for (const c of [t, u]) await (await c.approve(a.positionManager, MaxUint256)).wait();
  const { npm } = uniswapAt(a, lp);
  const sqrtPriceX96 = sqrtPriceX96For({
    base: { address: token, decimals: 18 },
    quote: { address: usdc, decimals: 6 },
    quotePerBase: price,
  });
  const tokenIs0 = BigInt(token) < BigInt(usdc);
  const [token0, token1] = tokenIs0 ? [token, usdc] : [usdc, token];
  await (await npm.createAndInitializePoolIfNecessary(token0, token1, fee, sqrtPriceX96, { gasLimit: 5_000_000 })).wait();
  const address = poolAddress(a.factory, token, usdc, fee);
  const pool = uniswapAt(a, lp).pool(address);
  const tick = Number((await pool.slot0()).tick);
  const spacing = Number(await pool.tickSpacing());
  const centre = Math.round(tick / spacing) * spacing;
  const width = Math.ceil(7_000 / spacing) * spacing;
  await (
    await npm.mint(
      {
        token0,
        token1,
        fee,
        tickLower: centre - width,
        tickUpper: centre + width,
        amount0Desired: tokenIs0 ? tokenAmount : usdcAmount,
        amount1Desired: tokenIs0 ? usdcAmount : tokenAmount,
        amount0Min: 0,
        amount1Min: 0,
        recipient: me,
        deadline: MaxUint256,
      },
      { gasLimit: 5_000_000 },
    )
  ).wait();
  await (await pool.increaseObservationCardinalityNext(20, { gasLimit: 5_000_000 })).wait();
  return address;
}

export interface SwapLeg {
  /** Default: WETH. */
  tokenIn?: string;
  tokenOut: string;
  recipient: string;
}

/** SwapRouter02 exactOutputSingle in the embedded pool's fee tier: exactly `amountOut` for at most `amountInMaximum`. */
export function swapExactOut(
  router: Pick<BaseContract, "getFunction">,
  leg: SwapLeg & { amountOut: bigint; amountInMaximum: bigint },
): Promise<ContractTransactionResponse> {
  const { tokenIn = WETH_ADDRESS, ...rest } = leg;
  return router.getFunction("exactOutputSingle")({ tokenIn, fee: UNISWAP_POOL_FEE, ...rest, sqrtPriceLimitX96: 0 });
}

/** SwapRouter02 exactInputSingle in the embedded pool's fee tier, with no minimum out (a sandwich's leg). */
export function swapExactIn(
  router: Pick<BaseContract, "getFunction">,
  leg: SwapLeg & { amountIn: bigint },
): Promise<ContractTransactionResponse> {
  const { tokenIn = WETH_ADDRESS, ...rest } = leg;
  return router.getFunction("exactInputSingle")({ tokenIn, fee: UNISWAP_POOL_FEE, ...rest, amountOutMinimum: 0, sqrtPriceLimitX96: 0 });
}

/** QuoterV2's spot price: the WETH that buys exactly `amountOut` of `tokenOut` in the embedded pool's fee tier now. */
export async function quoteExactOut(quoter: Contract, tokenOut: string, amountOut: bigint): Promise<bigint> {
  const quoted = (await quoter.getFunction("quoteExactOutputSingle").staticCall({
    tokenIn: WETH_ADDRESS,
    tokenOut,
    amount: amountOut,
    fee: UNISWAP_POOL_FEE,
    sqrtPriceLimitX96: 0,
  })) as { amountIn: bigint };
  return quoted.amountIn;
}

/** The quoteSwap request for `amountOut` USDC bought with WETH in the embedded pool (TWAP 30 min, 0.5% unless `over`). */
export function wethForUsdc(
  chain: { addresses: { usdc: string; uniswap: UniswapAddresses } },
  amountOut: bigint,
  over: Partial<{ fee: number; twapSeconds: number; maxSlippageBps: number }> = {},
) {
  return {
    factory: chain.addresses.uniswap.factory,
    quoterV2: chain.addresses.uniswap.quoterV2,
    tokenIn: WETH_ADDRESS,
    tokenOut: chain.addresses.usdc,
    fee: UNISWAP_POOL_FEE,
    amountOut,
    twapSeconds: 1800,
    maxSlippageBps: 50,
    ...over,
  };
}
