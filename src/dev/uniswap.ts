/**
 * Real Uniswap v3 on the embedded chain, deployed from the published npm artifacts (v3-core's factory, v3-periphery's
 * NonfungiblePositionManager and QuoterV2, swap-router-contracts' SwapRouter02), with WETH9 at the network's WETH
 * address and a USDC/WETH 0.05% pool holding liquidity around 3,000 USDC per ETH and an hour of price history, so that a
 * TWAP over up to 30 minutes is there from the first block the service sees.
 *
 * The history is real: the chain starts an hour in the past (resetNetwork in embeddedChain.ts) and swaps are mined across that
 * hour with evm_setNextBlockTimestamp, the last one at the wall clock, so the chain's clock ends level with it
 * (EIP-3009 validity windows are taken from the wall clock).
 */
import { Contract, ContractFactory, MaxUint256, ZeroAddress, type Signer } from "ethers";
import type { EIP1193Provider } from "hardhat/types";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../chain/addresses";
import { ARTIFACTS, uniswapArtifact } from "../chain/uniswapArtifacts";
import { poolAddress, sqrtPriceX96For } from "../chain/uniswapMath";

export interface UniswapAddresses {
  weth: string;
  factory: string;
  swapRouter02: string;
  quoterV2: string;
  positionManager: string;
  /** The USDC/WETH pool of the 0.05% fee tier. */
  usdcWethPool: string;
}

/** How far back the embedded pool's price history reaches. */
export const EMBEDDED_HISTORY_SECONDS = 3_600;
/** Price the embedded pool is initialised at, in USDC per ETH. */
export const EMBEDDED_ETH_PRICE_USDC = 3_000n;
const OBSERVATION_CARDINALITY = 100;
const HISTORY_SWAPS = 8;
const LIQUIDITY_WETH = 1_000n * 10n ** 18n;
const LIQUIDITY_USDC = 3_000_000n * 10n ** 6n;
const HISTORY_SWAP_USDC = 3_000n * 10n ** 6n;
// Ticks around the price (about 1,500 to 6,000 USDC per ETH), multiples of the 0.05% tier's spacing of 10.
const RANGE_TICKS = 6_930;
// Gas estimates are taken at another timestamp than the block's, and Uniswap's oracle writes depend on it.
const GAS = { gasLimit: 5_000_000 };

const ERC20_ABI = [
  "function approve(address spender, uint256 amount) returns (bool)",
  "function balanceOf(address) view returns (uint256)",
  "function mint(address to, uint256 amount) returns (bool)",
  "function deposit() payable",
];

async function deploy(signer: Signer, path: string, args: unknown[]): Promise<Contract> {
  const a = uniswapArtifact(path);
  const c = await new ContractFactory(a.abi, a.bytecode, signer).deploy(...args);
  await c.waitForDeployment();
  return c as Contract;
}

async function send(tx: Promise<{ wait(): Promise<unknown> }>): Promise<void> {
  await (await tx).wait();
}

/**
 * Deploys the Uniswap v3 contracts and a 0.05% pool of `usdc` (TestUSDC, anyone may mint) and WETH, funds it from
 * `deployer` (which needs about 1,020 ETH), and writes the price history described above. `weth9Code` is WETH9's
 * runtime code, placed at `weth` (the network's WETH address; default Base's).
 */
export async function deployEmbeddedUniswap(opts: {
  provider: EIP1193Provider;
  deployer: Signer;
  usdc: string;
  weth?: string;
  weth9Code: string;
}): Promise<UniswapAddresses> {
  const { provider, deployer, usdc, weth: wethAddress = WETH_ADDRESS } = opts;
  const me = await deployer.getAddress();
  await provider.request({ method: "hardhat_setCode", params: [wethAddress, opts.weth9Code] });

  const factory = await deploy(deployer, ARTIFACTS.factory, []);
  const factoryAddress = await factory.getAddress();
  const npm = await deploy(deployer, ARTIFACTS.positionManager, [factoryAddress, wethAddress, ZeroAddress]);
  const npmAddress = await npm.getAddress();
  // No Uniswap v2 here: SwapRouter02's v2 functions revert against a factoryV2 without code.
  const router = await deploy(deployer, ARTIFACTS.swapRouter02, [ZeroAddress, factoryAddress, npmAddress, wethAddress]);
  const routerAddress = await router.getAddress();
  const quoter = await deploy(deployer, ARTIFACTS.quoterV2, [factoryAddress, wethAddress]);

  const weth = new Contract(wethAddress, ERC20_ABI, deployer);
  const usdcToken = new Contract(usdc, ERC20_ABI, deployer);
  const historyWeth = 20n * 10n ** 18n;
  await send(weth.deposit({ value: LIQUIDITY_WETH + historyWeth }));
  await send(usdcToken.mint(me, LIQUIDITY_USDC + HISTORY_SWAP_USDC * BigInt(HISTORY_SWAPS)));
  for (const token of [weth, usdcToken]) {
    for (const spender of [npmAddress, routerAddress]) await send(token.approve(spender, MaxUint256));
  }

  const sqrtPriceX96 = sqrtPriceX96For({
    base: { address: wethAddress, decimals: 18 },
    quote: { address: usdc, decimals: 6 },
    quotePerBase: EMBEDDED_ETH_PRICE_USDC,
  });
  const [token0, token1] = BigInt(wethAddress) < BigInt(usdc) ? [wethAddress, usdc] : [usdc, wethAddress];
  await send(npm.createAndInitializePoolIfNecessary(token0, token1, UNISWAP_POOL_FEE, sqrtPriceX96, GAS));
  const poolAt = poolAddress(factoryAddress, wethAddress, usdc, UNISWAP_POOL_FEE);
  const pool = new Contract(poolAt, uniswapArtifact(ARTIFACTS.pool).abi, deployer);
  const tick = Number((await pool.slot0()).tick);
  const spacing = 10;
  const centre = Math.round(tick / spacing) * spacing;
  const [amount0, amount1] = token0 === wethAddress ? [LIQUIDITY_WETH, LIQUIDITY_USDC] : [LIQUIDITY_USDC, LIQUIDITY_WETH];
  await send(
    npm.mint(
      {
        token0,
        token1,
        fee: UNISWAP_POOL_FEE,
        tickLower: centre - RANGE_TICKS,
        tickUpper: centre + RANGE_TICKS,
        amount0Desired: amount0,
        amount1Desired: amount1,
        amount0Min: 0,
        amount1Min: 0,
        recipient: me,
        deadline: MaxUint256,
      },
      GAS,
    ),
  );
  await send(pool.increaseObservationCardinalityNext(OBSERVATION_CARDINALITY, GAS));
  await writeHistory(provider, router, usdc, wethAddress, me);

  return {
    weth: wethAddress,
    factory: factoryAddress,
    swapRouter02: routerAddress,
    quoterV2: await quoter.getAddress(),
    positionManager: npmAddress,
    usdcWethPool: poolAt,
  };
}

/**
 * Small swaps both ways, spread from the pool's creation to the wall clock: each writes an observation, and the
 * last block lands on the wall clock. With a chain that did not start in the past, this just adds a few blocks.
 */
async function writeHistory(provider: EIP1193Provider, router: Contract, usdc: string, wethAddress: string, me: string): Promise<void> {
  const latest = async () =>
    Number(((await provider.request({ method: "eth_getBlockByNumber", params: ["latest", false] })) as { timestamp: string }).timestamp);
  const start = await latest();
  const end = Math.max(Math.floor(Date.now() / 1000), start + HISTORY_SWAPS);
  for (let i = 1; i <= HISTORY_SWAPS; i++) {
    const at = start + Math.floor(((end - start) * i) / HISTORY_SWAPS);
    await provider.request({ method: "evm_setNextBlockTimestamp", params: [at] });
    // Alternate: buy ETH with USDC, then sell back about as much, so the price wanders a little around its start.
    const buyEth = i % 2 === 1;
    const amountIn = buyEth ? HISTORY_SWAP_USDC : (HISTORY_SWAP_USDC * 10n ** 12n) / EMBEDDED_ETH_PRICE_USDC;
    await send(
      router.exactInputSingle(
        {
          tokenIn: buyEth ? usdc : wethAddress,
          tokenOut: buyEth ? wethAddress : usdc,
          fee: UNISWAP_POOL_FEE,
          recipient: me,
          amountIn,
          amountOutMinimum: 0,
          sqrtPriceLimitX96: 0,
        },
        GAS,
      ),
    );
  }
}
