/** Uniswap v3 handles for tests on the embedded chain: the published artifacts' contracts, a trader, extra pools. */
import hre from "hardhat";
import { Contract, MaxUint256, getAddress, type Signer } from "ethers";
import { WETH_ADDRESS } from "../../src/chain/addresses";
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
