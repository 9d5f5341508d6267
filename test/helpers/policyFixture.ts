/**
 * Builders for the SpendPolicy contract tests and the gas benchmark: a factory, one deployed policy, and the
 * owner's EIP-712 signatures built from the shared types in src/chain/typedData.ts.
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import type { Signer } from "ethers";
import {
  NO_EXTRA_LIMITS,
  type SignedPolicyFields,
  APPROVAL_DECISION_TYPES,
  SET_OPERATOR_TYPES,
  SET_PAUSED_TYPES,
  SET_OWNER_TYPES,
  SET_POLICY_TYPES,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
  WITHDRAW_TYPES,
  policyDomain,
  walletSignature,
} from "../../src/chain/typedData";
import { ANY_PAYEE, type EntryCaps, type EntryPayees, allowlistRoot, merchantsOf, proveMerchant } from "../../src/policy/allowlist";
import type { ERC1271Wallet, SpendPolicy, SpendPolicyFactory, TestUSDC } from "../../typechain-types";
import { NO_SWAPS, type SwapConfig, deployFactoryContract, factoryArgs } from "../../src/chain/deploy";

const { ethers } = hre;

export const CHAIN_ID = 8453n;

/** PaymentAuthorized/PaymentBlocked's indexed merchantHash: keccak256 of the merchant string. */
export const merchantHash = (merchant: string): string => ethers.id(merchant);

/**
 * PaymentAuthorized's thirteen arguments for `.withArgs(...)`: the payment id, agent, merchant (and its hash), amount and
 * the day's spend after it (the amount unless given); payTo, validity, epoch and leaf are anyValue.
 */
export function authorizedArgs(id: unknown, agent: unknown, merchant: string, amount: unknown, spentToday: unknown = amount): unknown[] {
  return [
    id,
    agent,
    merchantHash(merchant),
    merchant,
    anyValue,
    amount,
    anyValue,
    anyValue,
    spentToday,
    anyValue,
    anyValue,
    anyValue,
    anyValue,
  ];
}

/**
 * PaymentBlocked's nine arguments for `.withArgs(...)`: the payment id, agent, merchant (and its hash), amount and
 * reason; the leaf the operator presented (entry, cap, payee) is anyValue.
 */
export function blockedArgs(id: unknown, agent: unknown, merchant: string, amount: unknown, reason: unknown): unknown[] {
  return [id, agent, merchantHash(merchant), merchant, amount, reason, anyValue, anyValue, anyValue];
}

/**
 * The storage slot of a wallet's allowlist root, found by its value (the layout starts with EIP712's): what a test that
 * writes storage behind the contract's back (a forged root) needs.
 */
export async function rootSlot(
  agent: string,
  root: string,
  provider: { getStorage(a: string, s: string): Promise<string> } = ethers.provider,
): Promise<string> {
  for (let i = 0; i < 16; i++) {
    const slot = ethers.toQuantity(i);
    if ((await provider.getStorage(agent, slot)) === root) return slot;
  }
  throw new Error(`no slot of ${agent} holds ${root}`);
}

/** USDC base units (6 decimals). */
export function usdc(amount: string | number): bigint {
  return ethers.parseUnits(String(amount), 6);
}

/** Five normalised entries: Merkle proofs of two or three hashes, as a real allowlist would have. */
export const ALLOWLIST = ["api.example.com", "*.data.io", "weather.xyz", "news.example.org", "*.maps.dev"];

/** A policy as the owner signs it (SetPolicy version 4: the allowlist in clear). */
export type PolicyValues = SignedPolicyFields;

export const DEFAULT_POLICY: PolicyValues = {
  perTxLimit: usdc(5),
  dailyBudget: usdc(12),
  merchants: merchantsOf(ALLOWLIST),
  approvalThreshold: usdc(3),
  ...NO_EXTRA_LIMITS,
};

/** The SignedPolicy tuple in its ABI order (what PolicyUpdated carries), merchants as [entry, dailyCap, payee, flag]. */
export function policyTuple(p: PolicyValues): unknown[] {
  return [
    p.perTxLimit,
    p.dailyBudget,
    p.merchants.map((m) => [m.entry, m.dailyCap, m.payee, m.requireSignedOffer]),
    p.approvalThreshold,
    p.hourlyBudget,
    p.weeklyBudget,
    p.monthlyBudget,
    p.lifetimeBudget,
    p.maxPaymentsPerHour,
    p.validUntil,
    p.maxSwapSlippageBps,
    p.swapTwapSeconds,
    p.minSwapRate,
  ];
}

/** The Policy tuple policy() answers for a signed policy: its merchants as the root the contract derived. */
export function storedTuple(p: PolicyValues): unknown[] {
  const root = allowlistRoot(
    p.merchants.map((m) => m.entry),
    Object.fromEntries(p.merchants.map((m) => [m.entry, m.dailyCap])),
    Object.fromEntries(p.merchants.map((m) => [m.entry, m.payee])),
  );
  return policyTuple(p).map((v, i) => (i === 2 ? root : v));
}

export interface Approval {
  approvalId: string;
  amount: bigint;
  timestamp: bigint;
  signature: string;
}

/** The "no approval" argument of authorizePayment. */
export const NO_APPROVAL: Approval = { approvalId: "", amount: 0n, timestamp: 0n, signature: "0x" };

/** Every timestamp issued, with the chain time it was issued at. */
const issued: { at: bigint; value: bigint }[] = [];
/**
 * A timestamp newer than the latest block's and than every one issued at or before the chain's present time (owner-
 * signed changes must increase, and blocks may share a second on this network). Ones issued at a later chain time
 * were taken back with the chain (a fixture's snapshot restored): the contracts never saw them.
 */
export async function nextTimestamp(): Promise<bigint> {
  const latest = BigInt(await time.latest()) + 1n;
  while (issued.length && issued[issued.length - 1].at > latest) issued.pop();
  const last = issued.reduce((m, x) => (x.value > m ? x.value : m), 0n);
  const value = latest > last ? latest : last + 1n;
  issued.push({ at: latest, value });
  return value;
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

/** SetPaused: `epoch` is the epoch a resume resumes (the policy's epoch() now); a pause takes effect whatever it names. */
export async function signSetPaused(
  signer: Signer,
  policyAddress: string,
  agent: string,
  paused: boolean,
  timestamp: bigint,
  epoch: bigint = 0n,
): Promise<string> {
  return signer.signTypedData(policyDomain(CHAIN_ID, policyAddress), SET_PAUSED_TYPES, { agent, paused, epoch, timestamp });
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

export async function signSetOwner(signer: Signer, policyAddress: string, newOwner: string, timestamp: bigint): Promise<string> {
  return signer.signTypedData(policyDomain(CHAIN_ID, policyAddress), SET_OWNER_TYPES, {
    agent: policyAddress,
    newOwner,
    timestamp,
  });
}

export interface WithdrawFields {
  token: string;
  to: string;
  amount: bigint;
  timestamp: bigint;
}

export async function signWithdraw(signer: Signer, policyAddress: string, w: WithdrawFields): Promise<string> {
  return signer.signTypedData(policyDomain(CHAIN_ID, policyAddress), WITHDRAW_TYPES, { agent: policyAddress, ...w });
}

export interface ApprovalFields {
  approvalId: string;
  agent: string;
  merchant: string;
  /** The payee the owner approves paying (the transfer's payTo). */
  payTo: string;
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

export { ANY_PAYEE };

/** The ISpendPolicy.Leaf argument of an entry (cap 0: none; payee 0: any). */
export function leafOf(entry: string, dailyCap = 0n, payee: string = ANY_PAYEE): LeafArg["leaf"] {
  return { entry, dailyCap, payee };
}

/** The ISpendPolicy.Leaf argument and its proof. */
export interface LeafArg {
  leaf: { entry: string; dailyCap: bigint; payee: string };
  proof: string[];
}

/**
 * The leaf (entry, cap, payee) and proof the service would send; for a merchant no leaf admits, the merchant itself,
 * no cap, any payee and no proof.
 */
export function proofFor(entries: readonly string[], merchant: string, caps: EntryCaps = {}, payees: EntryPayees = {}): LeafArg {
  const p = proveMerchant(entries, merchant, caps, payees);
  if (!p) return { leaf: { entry: merchant, dailyCap: 0n, payee: ANY_PAYEE }, proof: [] };
  return { leaf: { entry: p.leaf, dailyCap: p.cap, payee: p.payee }, proof: p.proof };
}

let idCounter = 0;
/** A fresh payment id (the EIP-3009 nonce in production). */
export function paymentId(): string {
  idCounter += 1;
  return ethers.id(`payment-${idCounter}`);
}

/** The one EIP-3009 transfer a payment authorises (authorizePayment's `transfer`). */
export interface TransferValues {
  payTo: string;
  amount: bigint;
  validAfter: bigint;
  validBefore: bigint;
}

/** A transfer of `amount` to `payTo`, valid for the next 10 minutes of chain time. */
export async function transferOf(amount: bigint, payTo: string, validFor = 600n): Promise<TransferValues> {
  const now = BigInt(await time.latest());
  return { payTo, amount, validAfter: 0n, validBefore: now + validFor };
}

/** The EIP-712 domain of USDC (TestUSDC) at `token`. */
export async function usdcDomain(token: TestUSDC) {
  return { name: await token.name(), version: await token.version(), chainId: CHAIN_ID, verifyingContract: await token.getAddress() };
}

/** The agent signing key's wallet signature for an authorised transfer (paymentId then ECDSA over the digest). */
export async function signTransfer(agentSigner: Signer, token: TestUSDC, wallet: string, id: string, t: TransferValues): Promise<string> {
  const digest = ethers.TypedDataEncoder.hash(await usdcDomain(token), TRANSFER_WITH_AUTHORIZATION_TYPES, {
    from: wallet,
    to: t.payTo,
    value: t.amount,
    validAfter: t.validAfter,
    validBefore: t.validBefore,
    nonce: id,
  });
  const key = agentSigner as unknown as { signingKey?: { sign(d: string): { serialized: string } } };
  if (!key.signingKey) throw new Error("signTransfer needs a Wallet (a raw signing key)");
  return walletSignature(id, key.signingKey.sign(digest).serialized);
}

/** Deploys an agent (wallet and policy) for signing key `signer` through the factory, first policy owner-signed. */
export async function deployAgentFor(
  factory: SpendPolicyFactory,
  operator: Signer,
  signer: string,
  ownerAddress: string,
  ownerSigner: Signer,
  values: PolicyValues = DEFAULT_POLICY,
  /** Deploy at the owner-bound address (predictAgent(signer, owner)) rather than the open one. */
  ownerBound = false,
): Promise<SpendPolicy> {
  const predicted = await factory.predictAgent(signer, ownerBound ? ownerAddress : ethers.ZeroAddress);
  const timestamp = await nextTimestamp();
  const signature = await signSetPolicy(ownerSigner, predicted, predicted, values, timestamp);
  await (await factory.connect(operator).deployAgent(signer, ownerAddress, ownerBound, values, timestamp, signature)).wait();
  return ethers.getContractAt("SpendPolicy", predicted);
}

/**
 * A configured SpendPolicyFactory over `usdc` (its modules deployed with it), owned by `deployer`, with `operator` as
 * default operator: what src/chain/deploy.ts deploys, without the deterministic proxy (a test may want several).
 */
export async function deployTestFactory(
  deployer: Signer,
  operator: string,
  usdcAddress: string,
  swap: SwapConfig = NO_SWAPS,
): Promise<SpendPolicyFactory> {
  const deployed = await deployFactoryContract(hre, deployer, await deployer.getAddress(), operator, usdcAddress, 1, swap);
  return ethers.getContractAt("SpendPolicyFactory", deployed.address);
}

/**
 * An unconfigured SpendPolicyFactory owned by `deployer`, committed to the compiled modules (as src/chain/deploy.ts
 * deploys it), with its modules created for `usdc` when given: for tests of createModules and configure themselves.
 */
export async function deployBareFactory(deployer: Signer, usdc?: string): Promise<SpendPolicyFactory> {
  const factory = await ethers.deployContract("SpendPolicyFactory", await factoryArgs(hre, await deployer.getAddress()), deployer);
  if (usdc !== undefined)
    await (await factory.createModules(await creationCode("SpendPolicySchemes"), await creationCode("SpendPolicyUpdates"), usdc)).wait();
  return factory;
}

/** A contract's creation code, without constructor arguments. */
export async function creationCode(name: string): Promise<string> {
  return (await hre.artifacts.readArtifact(name)).bytecode;
}

/**
 * One factory over a TestUSDC, one agent (wallet + policy) with DEFAULT_POLICY over ALLOWLIST and 100 USDC, plus an
 * agent owned by an ERC-1271 wallet. `agentKey` is the agent's signing key (a random Wallet, as the service makes).
 */
export async function policyFixture() {
  const [deployer, operator, owner, other, walletSigner, merchant] = await ethers.getSigners();
  const token: TestUSDC = await ethers.deployContract("TestUSDC");
  const tokenAddress = await token.getAddress();
  const factory = await deployTestFactory(deployer, operator.address, tokenAddress);
  const agentKey = ethers.Wallet.createRandom();
  const policy = await deployAgentFor(factory, operator, agentKey.address, owner.address, owner);
  const policyAddress = await policy.getAddress();
  const agent = policyAddress;
  await (await token.mint(agent, usdc(100))).wait();

  const wallet: ERC1271Wallet = await ethers.deployContract("ERC1271Wallet", [walletSigner.address]);
  const walletAddress = await wallet.getAddress();
  const agent2Key = ethers.Wallet.createRandom();
  const walletPolicy = await deployAgentFor(factory, operator, agent2Key.address, walletAddress, walletSigner);
  const agent2 = await walletPolicy.getAddress();

  const transfers = new Map<string, TransferValues>();

  /** Sends authorizePayment from the operator with the proof the service would build (a transfer to `merchant`). */
  async function pay(
    amount: bigint,
    merchantHost = "api.example.com",
    opts: {
      id?: string;
      approval?: Approval;
      entries?: readonly string[];
      /** Per-entry daily caps of `entries` (their root must be the policy's). */
      caps?: EntryCaps;
      /** Per-entry payees of `entries` (their root must be the policy's). */
      payees?: EntryPayees;
      target?: SpendPolicy;
      from?: Signer;
      transfer?: TransferValues;
      /** validBefore of the default transfer (default: 10 minutes after the latest block). */
      validBefore?: bigint;
    } = {},
  ) {
    const { leaf, proof } = proofFor(opts.entries ?? ALLOWLIST, merchantHost, opts.caps, opts.payees);
    const target = opts.target ?? policy;
    const transfer = opts.transfer ?? (await transferOf(amount, merchant.address));
    if (opts.validBefore !== undefined) transfer.validBefore = opts.validBefore;
    const id = opts.id ?? paymentId();
    transfers.set(id, transfer);
    return target.connect(opts.from ?? operator).authorizePayment(id, merchantHost, leaf, proof, transfer, opts.approval ?? NO_APPROVAL);
  }

  /** releasePayment with the transfer `pay` authorised under this id (or `transfer`). */
  async function release(id: string, opts: { from?: Signer; target?: SpendPolicy; transfer?: TransferValues } = {}) {
    const transfer = opts.transfer ?? transfers.get(id);
    if (!transfer) throw new Error(`no transfer recorded for ${id}`);
    return (opts.target ?? policy).connect(opts.from ?? operator).releasePayment(id, transfer);
  }

  /** Replaces the policy (owner-signed, relayed by `other`). */
  async function setPolicy(overrides: Partial<PolicyValues>) {
    const values = { ...DEFAULT_POLICY, ...overrides };
    const timestamp = await nextTimestamp();
    const signature = await signSetPolicy(owner, policyAddress, agent, values, timestamp);
    await (await policy.connect(other).updatePolicy(values, timestamp, signature)).wait();
    return values;
  }

  /** Pauses or resumes (owner-signed for the current epoch, relayed by `other`). */
  async function setPaused(paused: boolean) {
    const timestamp = await nextTimestamp();
    const epoch = await policy.epoch();
    const signature = await signSetPaused(owner, policyAddress, agent, paused, timestamp, epoch);
    await (await policy.connect(other).setPaused(paused, epoch, timestamp, signature)).wait();
  }

  return {
    token,
    tokenAddress,
    factory,
    policy,
    policyAddress,
    agent,
    agentKey,
    deployer,
    operator,
    owner,
    other,
    merchant,
    wallet,
    walletAddress,
    walletSigner,
    walletPolicy,
    agent2,
    agent2Key,
    pay,
    release,
    transfers,
    setPolicy,
    setPaused,
  };
}
