/**
 * Gas of the SpendPolicy contracts on the in-process Hardhat network (chain id 8453), per transaction, including
 * the 21k base cost and calldata. Payments use a 15-character merchant and the proofs of a five-entry allowlist
 * (two or three hashes), as the service sends them.
 *
 *   npx tsx scripts/bench-gas.ts        exit code 1 when a target is missed
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import { proveMerchant } from "../src/policy/allowlist";
import {
  ALLOWLIST,
  DEFAULT_POLICY,
  NO_APPROVAL,
  nextTimestamp,
  paymentId,
  signApproval,
  signSetPaused,
  signSetPolicy,
  usdc,
} from "../test/helpers/policyFixture";

const TARGET_ALLOWED = 70_000n;
const TARGET_BLOCKED = 50_000n;

interface Row {
  what: string;
  gas: bigint;
  kind?: "allowed" | "blocked";
}

async function gasOf(tx: Promise<ContractTransactionResponse>): Promise<bigint> {
  const receipt = await (await tx).wait();
  if (!receipt) throw new Error("no receipt");
  return receipt.gasUsed;
}

async function main(): Promise<void> {
  const { ethers } = hre;
  const [deployer, operator, agentWallet, owner, relayer] = await ethers.getSigners();
  const rows: Row[] = [];

  const factory = await ethers.deployContract("SpendPolicyFactory", [deployer.address, operator.address]);
  const factoryReceipt = await factory.deploymentTransaction()!.wait();
  rows.push({ what: "SpendPolicyFactory deployment", gas: factoryReceipt!.gasUsed });

  const agent = agentWallet.address;
  const predicted = await factory.predictPolicyAddress(agent);
  const ts0 = await nextTimestamp();
  const sig0 = await signSetPolicy(owner, predicted, agent, DEFAULT_POLICY, ts0);
  rows.push({
    what: "deployPolicy (one agent)",
    gas: await gasOf(factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, ts0, sig0)),
  });
  const policy = await ethers.getContractAt("SpendPolicy", predicted);
  const asOperator = policy.connect(operator);

  const measure = async (what: string, kind: Row["kind"], merchant: string, amount: bigint, approval = NO_APPROVAL) => {
    const { leaf, proof } = proveMerchant(ALLOWLIST, merchant) ?? { leaf: merchant, proof: [] };
    const id = paymentId();
    const gas = await gasOf(asOperator.authorizePayment(id, merchant, leaf, proof, amount, approval));
    rows.push({ what: `${what} (proof ${proof.length})`, gas, kind });
    return id;
  };

  // "api.example.com": 15 characters, exact leaf.
  const firstId = await measure("authorizePayment allowed, first of the policy", "allowed", "api.example.com", usdc(1));
  await measure("authorizePayment allowed, exact leaf", "allowed", "api.example.com", usdc(1));
  await measure("authorizePayment allowed, *.domain leaf", "allowed", "shop.data.io", usdc(1));
  await measure("authorizePayment blocked: merchant_not_allowed", "blocked", "shop.evil.test", usdc(1));
  await measure("authorizePayment blocked: per_tx_limit_exceeded", "blocked", "api.example.com", usdc(6));
  await measure("authorizePayment blocked: approval_required", "blocked", "api.example.com", usdc(4));

  const approval = await signApproval(owner, predicted, {
    approvalId: "apr_bench",
    agent,
    merchant: "api.example.com",
    amount: usdc(4),
    timestamp: BigInt(await time.latest()),
  });
  await measure("authorizePayment with owner approval", undefined, "api.example.com", usdc(4), approval);
  // 1 + 1 + 1 + 4 = 7 of 12 spent.
  await measure("authorizePayment blocked: daily_budget_exceeded", "blocked", "api.example.com", usdc(3) + usdc(2) + 1n);

  rows.push({ what: "releasePayment", gas: await gasOf(asOperator.releasePayment(firstId)) });

  await time.increase(86_400);
  await measure("authorizePayment allowed, first of a new day", "allowed", "api.example.com", usdc(1));

  const ts1 = await nextTimestamp();
  const newPolicy = { ...DEFAULT_POLICY, dailyBudget: usdc(50) };
  const sig1 = await signSetPolicy(owner, predicted, agent, newPolicy, ts1);
  rows.push({ what: "updatePolicy", gas: await gasOf(policy.connect(relayer).updatePolicy(newPolicy, ts1, sig1)) });

  const ts2 = await nextTimestamp();
  const sig2 = await signSetPaused(owner, predicted, agent, true, ts2);
  rows.push({ what: "setPaused(true)", gas: await gasOf(policy.connect(relayer).setPaused(true, ts2, sig2)) });
  await measure("authorizePayment blocked: policy_paused", "blocked", "api.example.com", usdc(1));

  const width = Math.max(...rows.map((r) => r.what.length));
  console.log(`${"transaction".padEnd(width)}  gasUsed`);
  console.log(`${"-".repeat(width)}  -------`);
  for (const r of rows) console.log(`${r.what.padEnd(width)}  ${r.gas.toString().padStart(7)}`);

  const maxOf = (kind: Row["kind"]) => rows.filter((r) => r.kind === kind).reduce((m, r) => (r.gas > m ? r.gas : m), 0n);
  const allowed = maxOf("allowed");
  const blocked = maxOf("blocked");
  const allowedOk = allowed < TARGET_ALLOWED;
  const blockedOk = blocked < TARGET_BLOCKED;
  console.log("");
  console.log(`targets: allowed authorizePayment < ${TARGET_ALLOWED}, blocked authorizePayment < ${TARGET_BLOCKED}`);
  console.log(`allowed: max ${allowed} ${allowedOk ? "PASS" : "FAIL"}`);
  console.log(`blocked: max ${blocked} ${blockedOk ? "PASS" : "FAIL"}`);
  if (!allowedOk || !blockedOk) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
