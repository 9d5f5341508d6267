/**
 * Gas of a wallet payment with a swap before settlement, on real Uniswap v3 (the npm artifacts): authorizePayment,
 * swapForPayment (WETH, then ETH wrapped) and the settlement, next to its parts (a plain exactOutput of USDC for WETH
 * through SwapRouter02, SwapBound's TWAP bound).
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { Contract, MaxUint256, type Signer } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../src/chain/addresses";
import { ARTIFACTS, uniswapArtifact } from "../src/chain/uniswapArtifacts";
import { deployEmbeddedUniswap } from "../src/dev/uniswap";
import {
  ALLOWLIST,
  DEFAULT_POLICY,
  NO_APPROVAL,
  deployAgentFor,
  deployTestFactory,
  paymentId,
  proofFor,
  signTransfer,
  transferOf,
  usdc as usdcUnits,
} from "../test/helpers/policyFixture";

const TOKEN_ABI = [
  "function approve(address, uint256) returns (bool)",
  "function deposit() payable",
  "function transfer(address, uint256) returns (bool)",
];

export async function swapGasRows(
  usdc: string,
  deployer: Signer,
  trader: Signer,
  operator: Signer,
  owner: Signer,
): Promise<{ what: string; gas: bigint }[]> {
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
    const tx = await router.exactOutputSingle({
      tokenIn: WETH_ADDRESS,
      tokenOut: usdc,
      fee: UNISWAP_POOL_FEE,
      recipient: me,
      amountOut,
      amountInMaximum: MaxUint256,
      sqrtPriceLimitX96: 0,
    });
    return (await tx.wait()).gasUsed as bigint;
  };
  await swap(1_000_000_000n); // the trader's first swap pays for its USDC balance slot: measure the steady state
  await time.increase(60);
  const again = await swap(1_000_000_000n);
  const harness = await hre.ethers.deployContract("SwapBoundHarness");
  const bound = async (twapSeconds: number) =>
    await harness.gasOfMaxAmountIn(a.factory, WETH_ADDRESS, usdc, UNISWAP_POOL_FEE, 1_000_000_000n, twapSeconds, 50);
  const payment = await walletPaymentWithSwap({ usdc, a, deployer, trader, operator, owner });
  return [
    ...payment,
    { what: "Uniswap exactOutputSingle WETH->USDC (1,000 USDC) via SwapRouter02", gas: again },
    { what: "SwapBound.maxAmountIn, TWAP 60 s (cold pool, inside a call)", gas: await bound(60) },
    { what: "SwapBound.maxAmountIn, TWAP 1800 s (cold pool, inside a call)", gas: await bound(1_800) },
  ];
}

/** authorizePayment + swapForPayment + settlement of 2 USDC from an agent wallet holding WETH (then ETH only). */
async function walletPaymentWithSwap(o: {
  usdc: string;
  a: { swapRouter02: string; weth: string; factory: string };
  deployer: Signer;
  trader: Signer;
  operator: Signer;
  owner: Signer;
}): Promise<{ what: string; gas: bigint }[]> {
  const { ethers } = hre;
  const factory = await deployTestFactory(o.deployer, await o.operator.getAddress(), o.usdc, [o.a.swapRouter02, o.a.weth, o.a.factory]);
  const agentKey = ethers.Wallet.createRandom();
  const policy = { ...DEFAULT_POLICY, maxSwapSlippageBps: 100n, swapTwapSeconds: 600n };
  const wallet = await deployAgentFor(factory, o.operator, agentKey.address, await o.owner.getAddress(), o.owner, policy);
  const agent = await wallet.getAddress();
  const token = await ethers.getContractAt("TestUSDC", o.usdc);
  await (await new Contract(WETH_ADDRESS, TOKEN_ABI, o.trader).transfer(agent, 10n ** 17n)).wait();
  const payTo = ethers.Wallet.createRandom().address;
  await (await token.mint(payTo, 1n)).wait(); // the payee's balance slot exists, as a merchant's does
  const { leaf, proof } = proofFor(ALLOWLIST, "api.example.com");
  const gas = async (tx: Promise<{ wait(): Promise<{ gasUsed: bigint } | null> }>) => (await (await tx).wait())!.gasUsed;
  const pay = async () => {
    const id = paymentId();
    const transfer = await transferOf(usdcUnits(2), payTo);
    const authorize = await gas(wallet.connect(o.operator).authorizePayment(id, "api.example.com", leaf, proof, transfer, NO_APPROVAL));
    const swap = await gas(wallet.connect(o.operator).swapForPayment(id, "api.example.com", transfer));
    const sig = await signTransfer(agentKey, token, agent, id, transfer);
    const settle = await gas(
      token["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
        agent,
        payTo,
        transfer.amount,
        transfer.validAfter,
        transfer.validBefore,
        id,
        sig,
      ),
    );
    return { authorize, swap, settle };
  };
  await pay(); // the first payment pays for new storage slots (USDC balance, window counts): measure the next
  const w = await pay();
  // ETH only: a fresh agent that holds no WETH.
  const ethKey = ethers.Wallet.createRandom();
  const ethWallet = await deployAgentFor(factory, o.operator, ethKey.address, await o.owner.getAddress(), o.owner, policy);
  await (await o.trader.sendTransaction({ to: await ethWallet.getAddress(), value: 10n ** 17n })).wait();
  const id = paymentId();
  const transfer = await transferOf(usdcUnits(2), payTo);
  await (await ethWallet.connect(o.operator).authorizePayment(id, "api.example.com", leaf, proof, transfer, NO_APPROVAL)).wait();
  const ethSwap = await gas(ethWallet.connect(o.operator).swapForPayment(id, "api.example.com", transfer));
  return [
    { what: "wallet payment with a swap: authorizePayment (2 USDC)", gas: w.authorize },
    { what: "wallet payment with a swap: swapForPayment (WETH, 2 USDC out)", gas: w.swap },
    { what: "wallet payment with a swap: settlement (transferWithAuthorization)", gas: w.settle },
    { what: "wallet payment with a swap: total", gas: w.authorize + w.swap + w.settle },
    { what: "swapForPayment from ETH (wrap, swap, unwrap the rest; first swap)", gas: ethSwap },
  ];
}
