/**
 * Uniswap v3's published npm artifacts (v3-core, v3-periphery, swap-router-contracts): the ABIs the swap quote reads
 * the pool and QuoterV2 with, and the bytecode the sandbox deploys (src/dev/uniswap.ts).
 */
import { readFileSync } from "node:fs";
import type { InterfaceAbi } from "ethers";

export interface UniswapArtifact {
  abi: InterfaceAbi;
  bytecode: string;
  deployedBytecode?: string;
}

/** A published artifact from node_modules, e.g. "@uniswap/v3-core/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json". */
export function uniswapArtifact(path: string): UniswapArtifact {
  return JSON.parse(readFileSync(require.resolve(path), "utf8")) as UniswapArtifact;
}

export const ARTIFACTS = {
  factory: "@uniswap/v3-core/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json",
  pool: "@uniswap/v3-core/artifacts/contracts/UniswapV3Pool.sol/UniswapV3Pool.json",
  positionManager: "@uniswap/v3-periphery/artifacts/contracts/NonfungiblePositionManager.sol/NonfungiblePositionManager.json",
  quoterV2: "@uniswap/v3-periphery/artifacts/contracts/lens/QuoterV2.sol/QuoterV2.json",
  swapRouter02: "@uniswap/swap-router-contracts/artifacts/contracts/SwapRouter02.sol/SwapRouter02.json",
} as const;
