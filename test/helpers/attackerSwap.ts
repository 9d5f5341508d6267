/** The attacks on an agent's WETH and ETH through swapForPayment, with every secret the service has. */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { Contract } from "ethers";
import type { SpendPolicy, TestUSDC } from "../../typechain-types";
import { NO_APPROVAL, refusedOnChain, settleFromWallet, type Attempt, type Secrets } from "./attackerBase";

const { ethers } = hre;

/** What the swap attacks need: the swap fixture's wallet (swaps on), with WETH and ETH, and its helpers. */
export interface SwapTarget {
  agent: SpendPolicy;
  agentAddress: string;
  token: TestUSDC;
  merchant: { host: string; leaf: { entry: string; dailyCap: bigint; payee: string }; proof: string[] };
  /** Sells WETH into the pool from another account (a sandwich's first leg); resolves to its back-run. */
  movePrice: () => Promise<() => Promise<void>>;
  /** Replaces the policy, owner-signed (the test plays the owner). */
  turnSwapsOff: () => Promise<void>;
}

/**
 * Every way a stolen server can try to lose the agent's WETH or ETH through swapForPayment. Each must be refused
 * on-chain: a revert, or the swap ending as PaymentBlocked(13) with nothing spent.
 */
export async function runSwapAttacks(s: Secrets, t: SwapTarget): Promise<Attempt[]> {
  const op = t.agent.connect(s.operator);
  const attempts: Attempt[] = [];
  const id = () => ethers.hexlify(ethers.randomBytes(32));
  const authorize = async (amount: bigint) => {
    const paymentId = id();
    const transfer = {
      payTo: ethers.Wallet.createRandom().address,
      amount,
      validAfter: 0n,
      validBefore: BigInt(await time.latest()) + 600n,
    };
    await (await op.authorizePayment(paymentId, t.merchant.host, t.merchant.leaf, t.merchant.proof, transfer, NO_APPROVAL)).wait();
    return { paymentId, transfer };
  };
  const swap = async (p: { paymentId: string; transfer: { payTo: string; amount: bigint; validAfter: bigint; validBefore: bigint } }) => {
    const receipt = await (await op.swapForPayment(p.paymentId, t.merchant.host, p.transfer, { gasLimit: 1_000_000 })).wait();
    const names = receipt!.logs.map((l) => t.agent.interface.parseLog(l)?.name);
    if (names.includes("SwapExecuted")) throw new Error("swapped");
    if (!names.includes("PaymentBlocked")) throw new Error("neither swapped nor blocked");
    throw new Error(`reverted with custom error 'PaymentBlocked(13), released'`);
  };
  // Calls a function the wallet does not have (the attacker's wish list): a router, a token or an amount of its own.
  const crafted = async (signature: string, args: unknown[]) => {
    const c = new Contract(t.agentAddress, [`function ${signature}`], s.operator);
    const name = signature.slice(0, signature.indexOf("("));
    await (await c.getFunction(name)(...args, { gasLimit: 1_000_000 })).wait();
  };
  const abiInputs = t.agent.interface.getFunction("swapForPayment").inputs.map((i) => i.name);
  if (abiInputs.join(",") !== "paymentId,merchant,transfer") throw new Error(`swapForPayment takes ${abiInputs.join(",")}`);
  const evil = ethers.Wallet.createRandom().address;

  const sandwiched = await authorize(2_000_000n);
  const backRun = await t.movePrice();
  attempts.push(await refusedOnChain("swap at a bad price (sandwich)", () => swap(sandwiched)));
  await backRun();
  const p = await authorize(2_000_000n);
  const transferTuple = [p.transfer.payTo, p.transfer.amount, p.transfer.validAfter, p.transfer.validBefore];
  const T = "(address,uint256,uint256,uint256)";
  attempts.push(
    await refusedOnChain("swap into another token", () =>
      crafted(`swapForPayment(bytes32,string,${T},address tokenOut)`, [p.paymentId, t.merchant.host, transferTuple, evil]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap through another router", () =>
      crafted(`swapForPayment(bytes32,string,${T},address router)`, [p.paymentId, t.merchant.host, transferTuple, evil]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap to another recipient", () =>
      crafted(`swapForPayment(bytes32,string,${T},address recipient)`, [p.paymentId, t.merchant.host, transferTuple, evil]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap of a chosen amount", () =>
      crafted(`swapForPayment(bytes32,string,${T},uint256 amountOut)`, [p.paymentId, t.merchant.host, transferTuple, 10n ** 12n]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap of more than the shortfall (a larger transfer than authorised)", () =>
      swap({ paymentId: p.paymentId, transfer: { ...p.transfer, amount: p.transfer.amount * 1_000n } }),
    ),
  );
  attempts.push(
    await refusedOnChain("swap by the agent key", async () =>
      (await t.agent.connect(s.agentKey.connect(ethers.provider)).swapForPayment(p.paymentId, t.merchant.host, p.transfer)).wait(),
    ),
  );
  const released = await authorize(2_000_000n);
  await (await op.releasePayment(released.paymentId, released.transfer)).wait();
  attempts.push(await refusedOnChain("swap for a released payment", () => swap(released)));
  attempts.push(await refusedOnChain("swap for a payment never authorised", () => swap({ paymentId: id(), transfer: p.transfer })));
  // The one swap the policy allows for p, then a second one for the same payment.
  const done = await (await op.swapForPayment(p.paymentId, t.merchant.host, p.transfer, { gasLimit: 1_000_000 })).wait();
  if (!done!.logs.some((l) => t.agent.interface.parseLog(l)?.name === "SwapExecuted")) throw new Error("the allowed swap did not happen");
  attempts.push(await refusedOnChain("a second swap for the same payment", () => swap(p)));
  await settleFromWallet(
    s,
    { agent: t.agent, agentAddress: t.agentAddress, token: t.token, merchant: t.merchant, thief: p.transfer.payTo },
    { to: p.transfer.payTo, value: p.transfer.amount, validAfter: 0n, validBefore: p.transfer.validBefore, nonce: p.paymentId },
  );
  attempts.push(await refusedOnChain("swap for a settled payment", () => swap(p)));
  const later = await authorize(2_000_000n);
  await t.turnSwapsOff();
  attempts.push(await refusedOnChain("swap when the policy says no swaps", () => swap(later)));
  return attempts;
}
