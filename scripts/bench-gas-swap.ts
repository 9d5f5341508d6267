/**
 * Gas of the parts a wallet swap before settlement will be made of, on real Uniswap v3 (the npm artifacts): a plain
 * exactOutput of USDC for WETH through SwapRouter02 and SwapBound's TWAP bound. A baseline for the wallet's swap.
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { Contract, MaxUint256, type Signer } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../src/chain/addresses";
import { ARTIFACTS, deployEmbeddedUniswap, uniswapArtifact } from "../src/chain/uniswap";

const TOKEN_ABI = ["function approve(address, uint256) returns (bool)", "function deposit() payable"];

export async function swapGasRows(usdc: string, deployer: Signer, trader: Signer): Promise<{ what: string; gas: bigint }[]> {
  const weth9 = await hre.artifacts.readArtifact("WETH9");
  const a = await deployEmbeddedUniswap({ provider: hre.network.provider, deployer, usdc, weth9Code: weth9.deployedBytecode });
  const router = new Contract(a.swapRouter02, uniswapArtifact(ARTIFACTS.swapRouter02).abi, trader);
  const me = await trader.getAddress();
  const weth = new Contract(WETH_ADDRESS, TOKEN_ABI, trader);
  await (await weth.deposit({ value: 10n ** 19n })).wait();
  await (await weth.approve(a.swapRouter02, MaxUint256)).wait();
  // Half an hour of history, so the 1,800 s TWAP reads real observations.
  await time.increase(1_800);
  const swap = async (amountOut: bigint) => {
    const tx = await router.exactOutputSingle({ tokenIn: WETH_ADDRESS, tokenOut: usdc, fee: UNISWAP_POOL_FEE, recipient: me, amountOut, amountInMaximum: MaxUint256, sqrtPriceLimitX96: 0 });
    return (await tx.wait()).gasUsed as bigint;
  };
  await swap(1_000_000_000n); // the trader's first swap pays for its USDC balance slot: measure the steady state
  await time.increase(60);
  const again = await swap(1_000_000_000n);
  const harness = await hre.ethers.deployContract("SwapBoundHarness");
  const bound = async (twapSeconds: number) =>
    (await harness.gasOfMaxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, 1_000_000_000n, twapSeconds, 50)) as bigint;
  return [
    { what: "Uniswap exactOutputSingle WETH->USDC (1,000 USDC) via SwapRouter02", gas: again },
    { what: "SwapBound.maxAmountIn, TWAP 60 s (cold pool, inside a call)", gas: await bound(60) },
    { what: "SwapBound.maxAmountIn, TWAP 1800 s (cold pool, inside a call)", gas: await bound(1_800) },
  ];
}
