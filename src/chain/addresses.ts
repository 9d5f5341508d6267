/** Well-known addresses, read from the network table (networks.ts, where each fact's source is named). */
import { DETERMINISTIC_DEPLOYER, MULTICALL3_ADDRESS, NETWORKS, NETWORK_LIST, type UniswapDeployment } from "./networks";

export { DETERMINISTIC_DEPLOYER, MULTICALL3_ADDRESS, type UniswapDeployment };

/** USDC of every network of the table, by chain id. */
export const USDC_ADDRESSES: Readonly<Record<number, string>> = Object.fromEntries(NETWORK_LIST.map((n) => [n.chainId, n.usdc.address]));

/** Base's USDC: the default network's, where the embedded chain of `base` places TestUSDC. */
export const BASE_USDC = NETWORKS.base.usdc.address;

/** WETH on Base and Base Sepolia (an OP Stack predeploy), and on the embedded chain of either. */
export const WETH_ADDRESS = NETWORKS.base.weth;

/** The fee tier of the USDC/WETH pool swaps go through: 0.05% (in hundredths of a basis point). */
export const UNISWAP_POOL_FEE = 500;

/** Uniswap v3 of every network of the table that has one, by chain id. */
export const UNISWAP_ADDRESSES: Readonly<Record<number, UniswapDeployment>> = Object.fromEntries(
  NETWORK_LIST.flatMap((n) => (n.uniswap ? [[n.chainId, n.uniswap]] : [])),
);

/** WETH of every network of the table that has one, by chain id. */
export const WETH_ADDRESSES: Readonly<Record<number, string>> = Object.fromEntries(
  NETWORK_LIST.flatMap((n) => (n.weth ? [[n.chainId, n.weth]] : [])),
);
