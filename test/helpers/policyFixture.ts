/**
 * Builders for the SpendPolicy contract tests and the gas benchmark: a factory, one deployed policy, and the
 * owner's EIP-712 signatures built from the shared types in src/chain/typedData.ts.
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { Signer } from "ethers";
import {
  APPROVAL_DECISION_TYPES,
  SET_OPERATOR_TYPES,
  SET_PAUSED_TYPES,
  SET_POLICY_TYPES,
  policyDomain,
} from "../../src/chain/typedData";
import { allowlistRoot, proveMerchant } from "../../src/policy/allowlist";
import type { ERC1271Wallet, SpendPolicy, SpendPolicyFactory } from "../../typechain-types";

const { ethers } = hre;

export const CHAIN_ID = 8453n;

/** USDC base units (6 decimals). */
export function usdc(amount: string | number): bigint {
  return ethers.parseUnits(String(amount), 6);
}

/** Five normalised entries: Merkle proofs of two or three hashes, as a real allowlist would have. */
export const ALLOWLIST = ["api.example.com", "*.data.io", "weather.xyz", "news.example.org", "*.maps.dev"];

export interface PolicyValues {
  perTxLimit: bigint;
  dailyBudget: bigint;
  allowlistRoot: string;
  approvalThreshold: bigint;
}

export const DEFAULT_POLICY: PolicyValues = {
  perTxLimit: usdc(5),
  dailyBudget: usdc(12),
  allowlistRoot: allowlistRoot(ALLOWLIST),
  approvalThreshold: usdc(3),
};

export interface Approval {
  approvalId: string;
  amount: bigint;
  timestamp: bigint;
  signature: string;
}

/** The "no approval" argument of authorizePayment. */
export const NO_APPROVAL: Approval = { approvalId: "", amount: 0n, timestamp: 0n, signature: "0x" };

/** A timestamp the next block accepts as newer than the latest one (owner-signed changes must increase). */
export async function nextTimestamp(): Promise<bigint> {
  return BigInt(await time.latest()) + 1n;
}

export async function signSetPolicy(
  signer: Signer,
  policyAddress: string,
  agent: string,
  values: PolicyValues,
  timestamp: bigint,
): Promise<string> {
  return signer.signTypedData(policyDomain(CHAIN_ID, policyAddress), SET_POLICY_TYPES, {
    agent,
    ...values,
    timestamp,
  });
}

export async function signSetPaused(
  signer: Signer,
  policyAddress: string,
  agent: string,
  paused: boolean,
  timestamp: bigint,
): Promise<string> {
  return signer.signTypedData(policyDomain(CHAIN_ID, policyAddress), SET_PAUSED_TYPES, { agent, paused, timestamp });
}

export async function signSetOperator(
  signer: Signer,
  policyAddress: string,
  agent: string,
  operator: string,
  timestamp: bigint,
): Promise<string> {
  return signer.signTypedData(policyDomain(CHAIN_ID, policyAddress), SET_OPERATOR_TYPES, {
    agent,
    operator,
    timestamp,
  });
}

export interface ApprovalFields {
  approvalId: string;
  agent: string;
  merchant: string;
  amount: bigint;
  timestamp: bigint;
  action?: "approve" | "deny";
}

/** An owner approval as authorizePayment takes it. */
export async function signApproval(signer: Signer, policyAddress: string, fields: ApprovalFields): Promise<Approval> {
  const { action = "approve", ...rest } = fields;
  const signature = await signer.signTypedData(policyDomain(CHAIN_ID, policyAddress), APPROVAL_DECISION_TYPES, {
    action,
    ...rest,
  });
  return { approvalId: fields.approvalId, amount: fields.amount, timestamp: fields.timestamp, signature };
}

/** The leaf and proof the service would send; for a merchant no leaf admits, the merchant itself and no proof. */
export function proofFor(entries: readonly string[], merchant: string): { leaf: string; proof: string[] } {
  return proveMerchant(entries, merchant) ?? { leaf: merchant, proof: [] };
}

let idCounter = 0;
/** A fresh payment id (the EIP-3009 nonce in production). */
export function paymentId(): string {
  idCounter += 1;
  return ethers.id(`payment-${idCounter}`);
}

/** Deploys an agent's policy through the factory with an owner-signed first policy. */
export async function deployPolicyFor(
  factory: SpendPolicyFactory,
  operator: Signer,
  agent: string,
  ownerAddress: string,
  ownerSigner: Signer,
  values: PolicyValues = DEFAULT_POLICY,
): Promise<SpendPolicy> {
  const predicted = await factory.predictPolicyAddress(agent);
  const timestamp = await nextTimestamp();
  const signature = await signSetPolicy(ownerSigner, predicted, agent, values, timestamp);
  await (await factory.connect(operator).deployPolicy(agent, ownerAddress, values, timestamp, signature)).wait();
  return ethers.getContractAt("SpendPolicy", predicted);
}

/** One factory and one agent's policy with DEFAULT_POLICY over ALLOWLIST, plus an ERC-1271-owned policy. */
export async function policyFixture() {
  const [deployer, operator, agentWallet, owner, other, walletSigner, agent2Wallet] = await ethers.getSigners();
  const factory = await ethers.deployContract("SpendPolicyFactory", [deployer.address, operator.address]);
  const agent = agentWallet.address;
  const policy = await deployPolicyFor(factory, operator, agent, owner.address, owner);
  const policyAddress = await policy.getAddress();

  const wallet: ERC1271Wallet = await ethers.deployContract("ERC1271Wallet", [walletSigner.address]);
  const walletAddress = await wallet.getAddress();
  const agent2 = agent2Wallet.address;
  const walletPolicy = await deployPolicyFor(factory, operator, agent2, walletAddress, walletSigner);

  /** Sends authorizePayment from the operator with the proof the service would build. */
  async function pay(
    amount: bigint,
    merchant = "api.example.com",
    opts: { id?: string; approval?: Approval; entries?: readonly string[]; target?: SpendPolicy; from?: Signer } = {},
  ) {
    const { leaf, proof } = proofFor(opts.entries ?? ALLOWLIST, merchant);
    const target = opts.target ?? policy;
    return target
      .connect(opts.from ?? operator)
      .authorizePayment(opts.id ?? paymentId(), merchant, leaf, proof, amount, opts.approval ?? NO_APPROVAL);
  }

  /** Replaces the policy (owner-signed, relayed by `other`). */
  async function setPolicy(overrides: Partial<PolicyValues>) {
    const values = { ...DEFAULT_POLICY, ...overrides };
    const timestamp = await nextTimestamp();
    const signature = await signSetPolicy(owner, policyAddress, agent, values, timestamp);
    await (await policy.connect(other).updatePolicy(values, timestamp, signature)).wait();
    return values;
  }

  /** Pauses or resumes (owner-signed, relayed by `other`). */
  async function setPaused(paused: boolean) {
    const timestamp = await nextTimestamp();
    const signature = await signSetPaused(owner, policyAddress, agent, paused, timestamp);
    await (await policy.connect(other).setPaused(paused, timestamp, signature)).wait();
  }

  return {
    factory,
    policy,
    policyAddress,
    agent,
    deployer,
    operator,
    owner,
    other,
    wallet,
    walletAddress,
    walletSigner,
    walletPolicy,
    agent2,
    pay,
    setPolicy,
    setPaused,
  };
}
