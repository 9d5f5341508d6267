/**
 * Gas of the wallet's x402 schemes (bench-gas.ts prints these rows): channel deposits (authorizeDeposit, the
 * collector redeeming the wallet's ReceiveWithAuthorization, a top-up, a credit after a refund), the ERC-1271 check of
 * a voucher, and upto ceilings (authorizeCeiling, creditCeiling after a partial settlement). The channel contract's
 * balance view is the test double at its canonical address until the sandbox channel contract lands; the collector
 * and Permit2 are impersonated (their own gas is not counted, only the wallet's and USDC's).
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { type Signer, ZeroAddress, hexlify, randomBytes, toBeHex, zeroPadValue } from "ethers";
import { walletSignature } from "../src/chain/typedData";
import { allowlistRoot, leafStruct, proveMerchant } from "../src/policy/allowlist";
import { ALLOWLIST, DEFAULT_POLICY, NO_APPROVAL, deployAgentFor, paymentId, usdc } from "../test/helpers/policyFixture";
import type { SpendPolicyFactory, TestUSDC } from "../typechain-types";

const BATCH_SETTLEMENT = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
const ERC3009_DEPOSIT_COLLECTOR = "0x4020806089470a89826cB9fB1f4059150b550004";
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

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
}): Promise<{ what: string; gas: bigint }[]> {
  const { ethers } = hre;
  const rows: { what: string; gas: bigint }[] = [];
  const double = await ethers.deployContract("ChannelBalancesDouble");
  await hre.network.provider.send("hardhat_setCode", [BATCH_SETTLEMENT, await ethers.provider.getCode(await double.getAddress())]);
  const channels = await ethers.getContractAt("ChannelBalancesDouble", BATCH_SETTLEMENT);
  const [collector, permit2, channelContract] = await Promise.all([
    actor(ERC3009_DEPOSIT_COLLECTOR),
    actor(PERMIT2),
    actor(BATCH_SETTLEMENT),
  ]);

  const payees = Object.fromEntries(ALLOWLIST.map((e) => [e, o.merchant]));
  const policy = { ...DEFAULT_POLICY, allowlistRoot: allowlistRoot(ALLOWLIST, {}, "v3", payees) };
  const agentKey = ethers.Wallet.createRandom();
  const wallet = await deployAgentFor(o.factory, o.operator, agentKey.address, await o.owner.getAddress(), o.owner, policy);
  const agent = await wallet.getAddress();
  await (await o.token.mint(agent, usdc(100))).wait();
  const schemes = (await ethers.getContractAt("SpendPolicySchemes", agent)).connect(o.operator);
  const proved = proveMerchant(ALLOWLIST, "api.example.com", {}, "v3", payees)!;
  const leaf = leafStruct(proved);
  const config = {
    payer: agent,
    payerAuthorizer: ZeroAddress,
    receiver: o.merchant,
    receiverAuthorizer: ethers.Wallet.createRandom().address,
    token: await o.token.getAddress(),
    withdrawDelay: 900,
    salt: hexlify(randomBytes(32)),
  };
  const channelId = await schemes.channelIdOf(config);

  const deposit = async (what: string, amount: bigint, receiver = o.merchant) => {
    const values = { amount, validAfter: 0n, validBefore: BigInt(await time.latest()) + 600n, nonceSalt: hexlify(randomBytes(32)) };
    const id = paymentId();
    const c = { ...config, receiver };
    rows.push({ what, gas: await gasOf(schemes.authorizeDeposit(id, "api.example.com", leaf, proved.proof, c, values, NO_APPROVAL)) });
    return { id, values };
  };
  const land = async (
    what: string,
    d: { id: string; values: { amount: bigint; validAfter: bigint; validBefore: bigint; nonceSalt: string } },
  ) => {
    const digest = await schemes.depositDigest(channelId, d.values);
    const nonce = ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(["bytes32", "bytes32"], [channelId, d.values.nonceSalt]));
    const signature = walletSignature(d.id, agentKey.signingKey.sign(digest).serialized);
    const tx = o.token
      .connect(collector)
      ["receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
        agent,
        ERC3009_DEPOSIT_COLLECTOR,
        d.values.amount,
        d.values.validAfter,
        d.values.validBefore,
        nonce,
        signature,
      );
    rows.push({ what, gas: await gasOf(tx) });
    await (await o.token.connect(collector).transfer(BATCH_SETTLEMENT, d.values.amount)).wait();
  };

  const first = await deposit("authorizeDeposit allowed, new channel, bound payee (proof 3)", usdc(2));
  await land("USDC receiveWithAuthorization of a deposit from the agent wallet (ERC-1271)", first);
  await deposit("authorizeDeposit blocked: payee_not_allowed (proof 3)", usdc(1), ethers.Wallet.createRandom().address);
  const topUp = await deposit("authorizeDeposit allowed, top-up of an open channel (proof 3)", usdc(1));
  await land("USDC receiveWithAuthorization of a top-up (ERC-1271)", topUp);
  await (await channels.setChannel(channelId, usdc(3), 0n)).wait();

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

  // The seller claimed 1 USDC; 2 come back; the credit reads the channel's balance.
  await (await o.token.connect(channelContract).transfer(agent, usdc(2))).wait();
  await (await channels.setChannel(channelId, usdc(1), usdc(1))).wait();
  rows.push({ what: "creditChannel (refund of 2 USDC credited to the day)", gas: await gasOf(schemes.creditChannel(first.id)) });

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
