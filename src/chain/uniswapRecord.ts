/**
 * The Uniswap v3 part of a deployment record: the addresses the wallet's swaps go through on that network (the
 * network table's, or explicit ones), each checked on-chain before the factory is deployed, and the USDC/WETH
 * 0.05% pool, derived from the factory and confirmed by its getPool.
 */
import { Contract, ZeroAddress, getAddress, type Provider } from "ethers";
import { UNISWAP_ADDRESSES, UNISWAP_POOL_FEE, WETH_ADDRESSES, type UniswapDeployment } from "./addresses";
import { poolAddress } from "./uniswapMath";

export interface UniswapRecord extends UniswapDeployment {
  weth: string;
  /** The USDC/WETH pool of `poolFee`; null when the network has none. */
  usdcWethPool: string | null;
  poolFee: number;
  source: string;
}

export const UNISWAP_SOURCE = "https://docs.uniswap.org/contracts/v3/reference/deployments/";

/**
 * The record for `chainId`, or null when no Uniswap (or no WETH) is known for it or, on the in-process hardhat network,
 * when the table's addresses hold no code there (a dry run, or a local node on `localhost`). On a live network, missing code is an error.
 */
export async function uniswapRecord(opts: {
  provider: Provider;
  chainId: number;
  network: string;
  usdc: string;
  uniswap?: UniswapDeployment;
  weth?: string;
}): Promise<UniswapRecord | null> {
  const known = opts.uniswap ?? UNISWAP_ADDRESSES[opts.chainId];
  const wethAt = opts.weth ?? WETH_ADDRESSES[opts.chainId];
  if (!known || !wethAt) return null;
  const weth = getAddress(wethAt);
  const addresses = {
    factory: getAddress(known.factory),
    swapRouter02: getAddress(known.swapRouter02),
    quoterV2: getAddress(known.quoterV2),
    positionManager: getAddress(known.positionManager),
  };
  const missing: string[] = [];
  for (const [name, address] of Object.entries({ weth, ...addresses })) {
    if ((await opts.provider.getCode(address)) === "0x") missing.push(`${name} ${address}`);
  }
  if (missing.length > 0) {
    // A dry run or a local node (staging) without Uniswap: swaps off. A live network must have it.
    if ((opts.network === "hardhat" || opts.network === "localhost") && !opts.uniswap) return null;
    throw new Error(`no Uniswap v3 contract on ${opts.network} at: ${missing.join(", ")}`);
  }
  const factory = new Contract(addresses.factory, ["function getPool(address, address, uint24) view returns (address)"], opts.provider);
  const onChain = getAddress((await factory.getPool(weth, opts.usdc, UNISWAP_POOL_FEE)) as string);
  const derived = poolAddress(addresses.factory, weth, opts.usdc, UNISWAP_POOL_FEE);
  if (onChain !== ZeroAddress && onChain !== derived) {
    throw new Error(`factory ${addresses.factory} reports pool ${onChain}, but the pool address derived from it is ${derived}`);
  }
  return {
    weth,
    ...addresses,
    usdcWethPool: onChain === ZeroAddress ? null : onChain,
    poolFee: UNISWAP_POOL_FEE,
    source: opts.uniswap ? "given to the deploy script" : UNISWAP_SOURCE,
  };
}
