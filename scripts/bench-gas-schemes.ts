/**
 * Gas of the wallet's x402 schemes (bench-gas.ts prints these rows and checks those with a target): channel deposits
 * (authorizeDeposit, the deposit landing through the ERC-3009 collector, a top-up, a credit after a refund), the
 * ERC-1271 check of a voucher and a claim with it, the payer-forced withdrawal (withdrawChannel, finishChannelWithdraw
 * after the channel's delay, the credit after it), and upto ceilings (authorizeCeiling, creditCeiling after a partial
 * settlement). Channels run on the sandbox's channel contract and collector at their canonical addresses
 * (src/dev/x402Schemes.ts); Permit2 is impersonated for the ceiling's settlement (only the wallet's and USDC's gas).
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { type Signer, ZeroAddress, hexlify, randomBytes, toBeHex, zeroPadValue } from "ethers";
import { walletSignature } from "../src/chain/typedData";
import { leafStruct, proveMerchant, merchantsOf } from "../src/policy/allowlist";
import { placeX402SchemeContracts } from "../src/dev/x402Schemes";
import { ALLOWLIST, DEFAULT_POLICY, NO_APPROVAL, deployAgentFor, paymentId, usdc } from "../test/helpers/policyFixture";
import { signClaimBatch, signRefund } from "../test/helpers/x402SchemeContracts";
import type { SpendPolicyFactory, TestUSDC } from "../typechain-types";

const BATCH_SETTLEMENT = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
const ERC3009_DEPOSIT_COLLECTOR = "0x4020806089470a89826cB9fB1f4059150b550004";
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

/**
 * Targets of the payer-forced withdrawal (gasUsed per transaction, 21k and calldata included), measured at 73,401
 * and 71,369 when written: the clone's and the fallback's delegatecalls, the channel id, the operator's and the
 * channel's slots, one read of the channel contract's balance, then its own call (initiateWithdraw writes the pending
 * withdrawal's slot; finalizeWithdraw clears it, lowers the balance and transfers the USDC back, and is read again to
 * log what came back). About 2k of headroom each, as the other targets.
 */
export const WITHDRAW_TARGETS = { withdrawChannel: 75_500n, finishChannelWithdraw: 73_500n };

async function gasOf(tx: Promise<{ wait: () => Promise<{ gasUsed: bigint } | null> }>): Promise<bigint> {
  const receipt = await (await tx).wait();
  if (!receipt) throw new Error("no receipt");
  return receipt.gasUsed;
}

async function actor(address: string): Promise<Signer> {
  await hre.network.provider.send("hardhat_impersonateAccount", [address]);
  await hre.network.provider.send("hardhat_setBalance", [address, "0xde0b6b3a7640000"]);
  return hre.ethers.getSigner(address);
}

export async function schemeGasRows(o: {
  token: TestUSDC;
  factory: SpendPolicyFactory;
  operator: Signer;
  owner: Signer;
  merchant: string;
}): Promise<{ what: string; gas: bigint; target?: bigint }[]> {
  const { ethers } = hre;
  const rows: { what: string; gas: bigint; target?: bigint }[] = [];
  await placeX402SchemeContracts(hre.network.provider);
  const batch = (await ethers.getContractAt("X402BatchSettlement", BATCH_SETTLEMENT)).connect(o.operator);
  const permit2 = await actor(PERMIT2);
  const receiverAuthorizer = ethers.Wallet.createRandom();

  const payees = Object.fromEntries(ALLOWLIST.map((e) => [e, o.merchant]));
  const policy = { ...DEFAULT_POLICY, merchants: merchantsOf(ALLOWLIST, {}, payees) };
  const agentKey = ethers.Wallet.createRandom();
  const wallet = await deployAgentFor(o.factory, o.operator, agentKey.address, await o.owner.getAddress(), o.owner, policy);
  const agent = await wallet.getAddress();
  await (await o.token.mint(agent, usdc(100))).wait();
  const schemes = (await ethers.getContractAt("SpendPolicySchemes", agent)).connect(o.operator);
  const proved = proveMerchant(ALLOWLIST, "api.example.com", {}, payees)!;
  const leaf = leafStruct(proved);
  const config = {
    payer: agent,
    payerAuthorizer: ZeroAddress,
    receiver: o.merchant,
    receiverAuthorizer: receiverAuthorizer.address,
    token: await o.token.getAddress(),
    withdrawDelay: 900,
    salt: hexlify(randomBytes(32)),
  };
  const channelId = await schemes.channelIdOf(config);

  type Deposit = {
    id: string;
    config: typeof config;
    values: { amount: bigint; validAfter: bigint; validBefore: bigint; nonceSalt: string };
  };
  const deposit = async (what: string | null, amount: bigint, c: typeof config = config): Promise<Deposit> => {
    const values = { amount, validAfter: 0n, validBefore: BigInt(await time.latest()) + 600n, nonceSalt: hexlify(randomBytes(32)) };
    const id = paymentId();
    const gas = await gasOf(schemes.authorizeDeposit(id, "api.example.com", leaf, proved.proof, c, values, NO_APPROVAL));
    if (what) rows.push({ what, gas });
    return { id, config: c, values };
  };
  /** The facilitator's channel deposit through the ERC-3009 collector, which redeems the wallet's authorisation. */
  const land = async (what: string | null, d: Deposit) => {
    const id = await schemes.channelIdOf(d.config);
    const signature = walletSignature(d.id, agentKey.signingKey.sign(await schemes.depositDigest(id, d.values)).serialized);
    const data = ethers.AbiCoder.defaultAbiCoder().encode(
      ["uint256", "uint256", "uint256", "bytes"],
      [d.values.validAfter, d.values.validBefore, BigInt(d.values.nonceSalt), signature],
    );
    const gas = await gasOf(batch.deposit(d.config, d.values.amount, ERC3009_DEPOSIT_COLLECTOR, data));
    if (what) rows.push({ what, gas });
  };

  const first = await deposit("authorizeDeposit allowed, new channel, bound payee (proof 3)", usdc(2));
  rows[rows.length - 1].target = 205_000n;
  await land("channel deposit through the ERC-3009 collector, new channel (wallet ERC-1271)", first);
  await deposit("authorizeDeposit blocked: payee_not_allowed (proof 3)", usdc(1), {
    ...config,
    receiver: ethers.Wallet.createRandom().address,
  });
  const topUp = await deposit("authorizeDeposit allowed, top-up of an open channel (proof 3)", usdc(1));
  await land("channel deposit through the ERC-3009 collector, top-up (wallet ERC-1271)", topUp);

  // A voucher's ERC-1271 check, as the channel contract makes it (the wallet calls itself, then delegatecalls).
  const amount = usdc(1);
  const voucherDigest = ethers.TypedDataEncoder.hash(
    { name: "x402 Batch Settlement", version: "1", chainId: 8453n, verifyingContract: BATCH_SETTLEMENT },
    {
      Voucher: [
        { name: "channelId", type: "bytes32" },
        { name: "maxClaimableAmount", type: "uint128" },
      ],
    },
    { channelId, maxClaimableAmount: amount },
  );
  const voucherSig = `${channelId}${zeroPadValue(toBeHex(amount), 32).slice(2)}${agentKey.signingKey.sign(voucherDigest).serialized.slice(2)}`;
  if ((await wallet.isValidSignature(voucherDigest, voucherSig)) !== "0x1626ba7e") throw new Error("the wallet refused the voucher");
  const voucherCall = await ethers.provider.estimateGas({
    to: agent,
    data: wallet.interface.encodeFunctionData("isValidSignature", [voucherDigest, voucherSig]),
  });
  rows.push({ what: "isValidSignature of a voucher (eth_estimateGas, incl. 21k and calldata)", gas: voucherCall });
  const claims = [{ voucher: { channel: config, maxClaimableAmount: amount }, signature: voucherSig, totalClaimed: amount }];
  rows.push({
    what: "channel claimWithSignature of 1 wallet voucher (receiver authorizer; wallet ERC-1271)",
    gas: await gasOf(batch.claimWithSignature(claims, await signClaimBatch(receiverAuthorizer, claims))),
  });

  // The seller claimed 1 USDC; its authorizer refunds 2; the credit reads the channel's balance.
  const refundSig = await signRefund(receiverAuthorizer, channelId, 0n, usdc(2));
  await (await batch.refundWithSignature(config, usdc(2), 0n, refundSig)).wait();
  rows.push({ what: "creditChannel (refund of 2 USDC credited to the day)", gas: await gasOf(schemes.creditChannel(first.id)) });

  // A seller that never refunds: the wallet withdraws as the payer, waits the delay, finishes, credits.
  const stranded = { ...config, salt: hexlify(randomBytes(32)) };
  const held = await deposit(null, usdc(2), stranded);
  await land(null, held);
  rows.push({
    what: "withdrawChannel (initiateWithdraw of 2 USDC as the payer)",
    gas: await gasOf(schemes.withdrawChannel(stranded)),
    target: WITHDRAW_TARGETS.withdrawChannel,
  });
  await time.increase(stranded.withdrawDelay);
  rows.push({
    what: "finishChannelWithdraw (finalizeWithdraw: 2 USDC back)",
    gas: await gasOf(schemes.finishChannelWithdraw(stranded)),
    target: WITHDRAW_TARGETS.finishChannelWithdraw,
  });
  rows.push({ what: "creditChannel (withdrawal of 2 USDC credited)", gas: await gasOf(schemes.creditChannel(held.id)) });

  const ceiling = {
    payTo: o.merchant,
    facilitator: ethers.Wallet.createRandom().address,
    amount: usdc(3),
    nonce: BigInt(hexlify(randomBytes(32))),
    deadline: BigInt(await time.latest()) + 600n,
    validAfter: 0n,
  };
  const ceilingId = paymentId();
  rows.push({
    what: "authorizeCeiling allowed (Permit2 approve of the ceiling; proof 3)",
    gas: await gasOf(schemes.authorizeCeiling(ceilingId, "api.example.com", leaf, proved.proof, ceiling, NO_APPROVAL)),
  });
  await (await o.token.connect(permit2).transferFrom(agent, o.merchant, usdc(1))).wait();
  rows.push({ what: "creditCeiling (2 of 3 USDC unsettled)", gas: await gasOf(schemes.creditCeiling(ceilingId)) });
  return rows;
}
