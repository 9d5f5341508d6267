/**
 * Gas of the SpendGate contracts on the in-process Hardhat network (chain id 8453), per transaction, including the
 * 21k base cost and calldata. Payments use a 15-character merchant and the proofs of a five-entry allowlist (two or
 * three hashes), as the service sends them; settlements go through TestUSDC's EIP-3009 transferWithAuthorization as
 * the x402 facilitator sends them (65-byte v,r,s for a plain address, the bytes overload for an agent wallet).
 *
 *   npm run bench:gas        exit code 1 when a target is missed
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { Signature, type ContractTransactionResponse } from "ethers";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../src/chain/typedData";
import { NO_LEAF, leafStruct, proveMerchant, merchantsOf } from "../src/policy/allowlist";
import {
  ALLOWLIST,
  DEFAULT_POLICY,
  NO_APPROVAL,
  creationCode,
  deployAgentFor,
  nextTimestamp,
  paymentId,
  signApproval,
  signSetPaused,
  signSetPolicy,
  signTransfer,
  signWithdraw,
  transferOf,
  usdc,
  usdcDomain,
} from "../test/helpers/policyFixture";
import { swapGasRows } from "./bench-gas-swap";
import { schemeGasRows } from "./bench-gas-schemes";
import { NO_SWAPS, factoryArgs } from "../src/chain/deploy";

interface Row {
  what: string;
  gas: bigint;
  kind?: "allowed" | "blocked";
  /** A row's own target (checked below with the others). */
  target?: bigint;
}

/** EIP-170: the most runtime code a contract may have. */
const MAX_CODE_SIZE = 24_576n;

/** Runtime code size of a compiled contract, in bytes. */
async function codeSize(name: string): Promise<bigint> {
  const { deployedBytecode } = await hre.artifacts.readArtifact(name);
  return BigInt((deployedBytecode.length - 2) / 2);
}

const TARGETS = {
  // Wallet and policy of one agent whose first policy names one merchant (signed in clear: each entry is calldata, two
  // hashes and a logged copy, about 5,000 gas more).
  deploy: 250_000n,
  // An allowed authorisation with a bound payee and the leaf in its event: at most 3k more than before payees (72,370).
  allowed: 75_500n,
  // 49,039 before the judged leaf (entry, cap, payee) was logged with PaymentBlocked.
  blocked: 51_000n,
  // 39,995 before epochs; the 16-bit day beside the epoch in slot 0 costs one mask per read (+28).
  release: 40_100n,
  settlementDiff: 15_000n,
  // Settlement from the wallet (ERC-1271, with the epoch check): at most 3k more than before epochs (78,701).
  walletSettlement: 81_701n,
  allowedEveryLimit: 93_000n,
  // The owner signs ten entries in clear; the contract hashes them (EIP-712 and the Merkle tree) and logs them.
  updatePolicy10: 140_000n,
};

async function gasOf(tx: Promise<ContractTransactionResponse>): Promise<bigint> {
  const receipt = await (await tx).wait();
  if (!receipt) throw new Error("no receipt");
  return receipt.gasUsed;
}

async function main(): Promise<void> {
  const { ethers } = hre;
  const [deployer, operator, owner, relayer, merchant, facilitator] = await ethers.getSigners();
  const rows: Row[] = [];

  const token = await ethers.deployContract("TestUSDC");
  const factory = await ethers.deployContract("SpendPolicyFactory", await factoryArgs(hre, deployer.address));
  rows.push({ what: "SpendPolicyFactory deployment", gas: (await factory.deploymentTransaction()!.wait())!.gasUsed });
  const [bytecode, schemesCode, updatesCode] = await Promise.all(
    ["SpendPolicy", "SpendPolicySchemes", "SpendPolicyUpdates"].map(creationCode),
  );
  rows.push({
    what: "SpendPolicyFactory.createModules (deploys the schemes and updates modules)",
    gas: await gasOf(factory.createModules(schemesCode, updatesCode, await token.getAddress())),
  });
  rows.push({
    what: "SpendPolicyFactory.configure (deploys the implementation)",
    gas: await gasOf(factory.configure(bytecode, operator.address, ...NO_SWAPS)),
  });
  // Every entry's payee is pinned to the merchant (version 3 leaves), as an owner who names who is paid has it.
  const payees = Object.fromEntries(ALLOWLIST.map((e) => [e, merchant.address]));
  const pinned = { ...DEFAULT_POLICY, merchants: merchantsOf(ALLOWLIST, {}, payees) };
  const agentKey = ethers.Wallet.createRandom();
  const predicted = await factory.predictAgent(agentKey.address, owner.address);
  const ts0 = await nextTimestamp();
  const sig0 = await signSetPolicy(owner, predicted, predicted, pinned, ts0);
  const deployGas = await gasOf(factory.connect(operator).deployAgent(agentKey.address, owner.address, true, pinned, ts0, sig0));
  rows.push({ what: `deployAgent, ${ALLOWLIST.length} merchants in clear (wallet + policy of one agent)`, gas: deployGas });
  const policy = await ethers.getContractAt("SpendPolicy", predicted);
  const asOperator = policy.connect(operator);
  await (await token.mint(predicted, usdc(100))).wait();
  // The merchant already holds USDC, so both settlements below write a balance that exists (no new-slot cost).
  await (await token.mint(merchant.address, 1n)).wait();

  const measure = async (
    what: string,
    kind: Row["kind"],
    merchantHost: string,
    amount: bigint,
    approval = NO_APPROVAL,
    payTo = merchant.address,
  ) => {
    const proved = proveMerchant(ALLOWLIST, merchantHost, {}, payees) ?? { ...NO_LEAF, leaf: merchantHost };
    const { proof } = proved;
    const id = paymentId();
    const transfer = await transferOf(amount, payTo);
    const gas = await gasOf(asOperator.authorizePayment(id, merchantHost, leafStruct(proved), proof, transfer, approval));
    rows.push({ what: `${what} (proof ${proof.length})`, gas, kind });
    return { id, transfer };
  };

  const first = await measure("authorizePayment allowed, bound payee, first of the agent", "allowed", "api.example.com", usdc(1));
  const second = await measure("authorizePayment allowed, bound payee, exact leaf", "allowed", "api.example.com", usdc(1));
  await measure("authorizePayment allowed, bound payee, *.domain leaf", "allowed", "shop.data.io", usdc(1));
  await measure("authorizePayment blocked: merchant_not_allowed", "blocked", "shop.evil.test", usdc(1));
  await measure("authorizePayment blocked: payee_not_allowed", "blocked", "api.example.com", usdc(1), NO_APPROVAL, relayer.address);
  await measure("authorizePayment blocked: per_tx_limit_exceeded", "blocked", "api.example.com", usdc(6));
  await measure("authorizePayment blocked: approval_required", "blocked", "api.example.com", usdc(4));
  const approval = await signApproval(owner, predicted, {
    approvalId: "apr_bench",
    agent: predicted,
    merchant: "api.example.com",
    payTo: merchant.address,
    amount: usdc(4),
    timestamp: BigInt(await time.latest()),
  });
  await measure("authorizePayment with owner approval", undefined, "api.example.com", usdc(4), approval);
  // 1 + 1 + 1 + 4 = 7 of 12 spent.
  await measure("authorizePayment blocked: daily_budget_exceeded", "blocked", "api.example.com", usdc(5) + 1n);

  // Settlement from the agent wallet (ERC-1271, bytes overload) against one from a plain address (v, r, s).
  const t = second.transfer;
  const walletSig = await signTransfer(agentKey, token, predicted, second.id, t);
  const walletSettle = await gasOf(
    token
      .connect(facilitator)
      ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
        predicted,
        t.payTo,
        t.amount,
        t.validAfter,
        t.validBefore,
        second.id,
        walletSig,
      ),
  );
  rows.push({ what: "USDC transferWithAuthorization from the agent wallet (ERC-1271)", gas: walletSettle });
  const plain = ethers.Wallet.createRandom();
  await (await token.mint(plain.address, usdc(10))).wait();
  const plainNonce = paymentId();
  const digestFields = {
    from: plain.address,
    to: t.payTo,
    value: t.amount,
    validAfter: t.validAfter,
    validBefore: t.validBefore,
    nonce: plainNonce,
  };
  const plainSig = Signature.from(await plain.signTypedData(await usdcDomain(token), TRANSFER_WITH_AUTHORIZATION_TYPES, digestFields));
  const plainSettle = await gasOf(
    token
      .connect(facilitator)
      ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)"](
        plain.address,
        t.payTo,
        t.amount,
        t.validAfter,
        t.validBefore,
        plainNonce,
        plainSig.v,
        plainSig.r,
        plainSig.s,
      ),
  );
  rows.push({ what: "USDC transferWithAuthorization from a plain address (v, r, s)", gas: plainSettle });

  const releaseGas = await gasOf(asOperator.releasePayment(first.id, first.transfer));
  rows.push({ what: "releasePayment", gas: releaseGas });
  rows.push({
    what: "voidUnrecordedPayment (recovery of an unsent payment)",
    gas: await gasOf(asOperator.voidUnrecordedPayment(paymentId())),
  });

  await time.increase(86_400);
  await measure("authorizePayment allowed, first of a new day", "allowed", "api.example.com", usdc(1));

  // The owner signs the allowlist in clear: the update's cost grows with the entries (calldata, hashing, the event).
  const update = async (what: string, entries: readonly string[], target?: bigint) => {
    const ts = await nextTimestamp();
    const next = {
      ...pinned,
      dailyBudget: usdc(50),
      merchants: merchantsOf(entries, {}, Object.fromEntries(entries.map((e) => [e, merchant.address]))),
    };
    const sig = await signSetPolicy(owner, predicted, predicted, next, ts);
    rows.push({ what, gas: await gasOf(policy.connect(relayer).updatePolicy(next, ts, sig)), target });
  };
  const TEN = [
    "api.example.com",
    "weather.xyz",
    "news.example.org",
    "maps.dev",
    "data.io",
    "search.example.net",
    "pay.example.com",
    "llm.example.ai",
    "img.example.com",
    "geo.example.io",
  ];
  await update("updatePolicy, 1 merchant in clear", TEN.slice(0, 1));
  await update("updatePolicy, 10 merchants in clear", TEN, TARGETS.updatePolicy10);
  await update(`updatePolicy, ${ALLOWLIST.length} merchants in clear`, ALLOWLIST);
  const ts2 = await nextTimestamp();
  const sig2 = await signSetPaused(owner, predicted, predicted, true, ts2);
  rows.push({ what: "setPaused(true)", gas: await gasOf(policy.connect(relayer).setPaused(true, 0n, ts2, sig2)) });
  await measure("authorizePayment blocked: policy_paused", "blocked", "api.example.com", usdc(1));
  const w = { token: await token.getAddress(), to: owner.address, amount: usdc(5), timestamp: await nextTimestamp() };
  const wSig = await signWithdraw(owner, predicted, w);
  rows.push({
    what: "withdraw (USDC, owner-signed, relayed)",
    gas: await gasOf(policy.connect(relayer).withdraw(w.token, w.to, w.amount, w.timestamp, wSig)),
  });
  // A second agent's deployment, as every later agent is (the implementation is warm in nothing but the factory), its
  // first policy naming one pinned merchant: each further entry the owner signs in clear adds about 5,000 gas.
  const agent2 = ethers.Wallet.createRandom();
  const before = await ethers.provider.getBlockNumber();
  const one = { ...pinned, merchants: merchantsOf(["api.example.com"], {}, { "api.example.com": merchant.address }) };
  await deployAgentFor(factory, operator, agent2.address, owner.address, owner, one);
  const deploy2 = (await ethers.provider.getBlock(before + 1, true))!;
  const deploy2Gas = (await ethers.provider.getTransactionReceipt(deploy2.transactions[0]))!.gasUsed;
  rows.push({ what: "deployAgent, 1 merchant in clear (another agent)", gas: deploy2Gas, target: TARGETS.deploy });

  // An agent with every limit of the grown SetPolicy set, api.example.com capped per day in its leaf.
  const caps = { "api.example.com": usdc(50) };
  const everyLimit = {
    ...DEFAULT_POLICY,
    dailyBudget: usdc(100),
    merchants: merchantsOf(ALLOWLIST, caps),
    hourlyBudget: usdc(60),
    weeklyBudget: usdc(300),
    monthlyBudget: usdc(900),
    lifetimeBudget: usdc(5000),
    maxPaymentsPerHour: 100n,
    validUntil: BigInt(await time.latest()) + 30n * 86_400n,
  };
  const agent3 = ethers.Wallet.createRandom();
  const full = await deployAgentFor(factory, operator, agent3.address, owner.address, owner, everyLimit);
  const fullAddress = await full.getAddress();
  await (await token.mint(fullAddress, usdc(100))).wait();
  const payFull = async (what: string, kind: Row["kind"], amount: bigint) => {
    const proved = proveMerchant(ALLOWLIST, "api.example.com", caps)!;
    const id = paymentId();
    const transfer = await transferOf(amount, merchant.address);
    const gas = await gasOf(
      full.connect(operator).authorizePayment(id, "api.example.com", leafStruct(proved), proved.proof, transfer, NO_APPROVAL),
    );
    rows.push({ what: `${what} (proof ${proved.proof.length})`, gas, kind });
    return { id, transfer, gas };
  };
  await payFull("every limit set: authorizePayment allowed, first of the agent", undefined, usdc(1));
  const fullWarm = await payFull("every limit set: authorizePayment allowed", undefined, usdc(1));
  await payFull("every limit set: authorizePayment blocked: per_tx_limit_exceeded", "blocked", usdc(6));
  const fullRelease = await gasOf(full.connect(operator).releasePayment(fullWarm.id, fullWarm.transfer));
  rows.push({ what: "every limit set: releasePayment", gas: fullRelease });

  rows.push(...(await schemeGasRows({ token, factory, operator, owner, merchant: merchant.address })));
  rows.push(...(await swapGasRows(await token.getAddress(), deployer, merchant, operator, owner)));

  const width = Math.max(...rows.map((r) => r.what.length));
  console.log(`${"transaction".padEnd(width)}  gasUsed`);
  console.log(`${"-".repeat(width)}  -------`);
  for (const r of rows) console.log(`${r.what.padEnd(width)}  ${r.gas.toString().padStart(7)}`);

  const maxOf = (kind: Row["kind"]) => rows.filter((r) => r.kind === kind).reduce((m, r) => (r.gas > m ? r.gas : m), 0n);
  const checks: [string, bigint, bigint][] = [
    ["authorizePayment allowed (max)", maxOf("allowed"), TARGETS.allowed],
    ["authorizePayment blocked (max)", maxOf("blocked"), TARGETS.blocked],
    ["releasePayment", releaseGas, TARGETS.release],
    ["settlement: agent wallet minus plain address", walletSettle - plainSettle, TARGETS.settlementDiff],
    ["settlement from the agent wallet (ERC-1271)", walletSettle, TARGETS.walletSettlement],
    ["authorizePayment allowed, every limit set (warm)", fullWarm.gas, TARGETS.allowedEveryLimit],
    ...rows.filter((r) => r.target !== undefined).map((r): [string, bigint, bigint] => [r.what, r.gas, r.target!]),
    ["SpendPolicy runtime size (bytes)", await codeSize("SpendPolicy"), MAX_CODE_SIZE],
    ["SpendPolicySchemes runtime size (bytes)", await codeSize("SpendPolicySchemes"), MAX_CODE_SIZE],
    ["SpendPolicyUpdates runtime size (bytes)", await codeSize("SpendPolicyUpdates"), MAX_CODE_SIZE],
    ["SpendPolicyFactory runtime size (bytes)", await codeSize("SpendPolicyFactory"), MAX_CODE_SIZE],
  ];
  console.log("");
  let ok = true;
  for (const [what, gas, target] of checks) {
    const pass = gas <= target;
    ok &&= pass;
    console.log(`${what.padEnd(60)} ${gas.toString().padStart(7)}  target <= ${target}  ${pass ? "PASS" : "FAIL"}`);
  }
  if (!ok) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
