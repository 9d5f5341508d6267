/**
 * Builders for the wallet's x402 scheme tests (batch-settlement deposits and vouchers, upto ceilings): the agent
 * wallet as a stock @x402/evm client signer (every digest is the one the stock client computes, answered with the
 * wallet's signature formats), channel configs, and a channel's life on the sandbox's own channel contract and
 * ERC-3009 deposit collector (contracts/test/x402/, placed at their canonical addresses as the embedded chain places
 * them): deposits landed by a facilitator, claims with vouchers the wallet answers, refunds the receiver authorizer
 * signs, withdrawals. Permit2 is placed too, but the upto tests still pull as Permit2 (impersonated).
 */
import hre from "hardhat";
import { impersonateAccount, setBalance, time } from "@nomicfoundation/hardhat-network-helpers";
import { AbiCoder, type SigningKey, ZeroAddress, getAddress, hexlify, randomBytes, toBeHex, zeroPadValue } from "ethers";
import { hashTypedData, type TypedDataDefinition } from "viem";
import type { ClientEvmSigner } from "@x402/evm";
import type { PaymentRequirements } from "@x402/core/types";
import { walletSignature } from "../../src/chain/typedData";
import type { ChannelConfigFields } from "../../src/store/channelDocuments";
import { computeChannelId, createBatchSettlementEIP3009DepositPayload, signVoucher } from "@x402/evm/batch-settlement/client";
import { placeX402SchemeContracts } from "../../src/dev/x402Schemes";
import { signClaimBatch, signRefund } from "./x402SchemeContracts";
import { merchantsOf } from "../../src/policy/allowlist";
import { ALLOWLIST, NO_APPROVAL, paymentId, policyFixture, proofFor } from "./policyFixture";

const { ethers } = hre;

export const NETWORK = "eip155:8453";
export const BATCH_SETTLEMENT = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
export const ERC3009_DEPOSIT_COLLECTOR = "0x4020806089470a89826cB9fB1f4059150b550004";
export const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
/** The merchant of the scheme tests; its allowlist leaf pins the payee (channelFixture). */
export const CHANNEL_HOST = "api.example.com";
export const UPTO_PROXY = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";

/** One typed-data signature the stock client asked the wallet for: its digest (viem's hash) and the wallet's answer. */
export interface Signed {
  primaryType: string;
  digest: string;
  message: Record<string, unknown>;
  signature: string;
}

/**
 * The agent wallet as a stock x402 client signer. Its address is the wallet; each signature is the agent signing
 * key's ECDSA over the digest the client computed, in the wallet's format: a Voucher as channelId, amount, r, s, v
 * (129 bytes); anything else as `paymentId()` then r, s, v (97 bytes, the authorisation it belongs to).
 */
export function walletClientSigner(
  wallet: string,
  agentKey: { signingKey: SigningKey },
  paymentId: () => string,
  log: Signed[] = [],
): ClientEvmSigner {
  return {
    address: getAddress(wallet) as `0x${string}`,
    signTypedData(td) {
      const digest = hashTypedData(td as unknown as TypedDataDefinition);
      const ecdsa = agentKey.signingKey.sign(digest).serialized;
      let signature: string;
      if (td.primaryType === "Voucher") {
        const m = td.message as { channelId: string; maxClaimableAmount: bigint };
        signature = `${m.channelId}${zeroPadValue(toBeHex(m.maxClaimableAmount), 32).slice(2)}${ecdsa.slice(2)}`;
      } else {
        signature = walletSignature(paymentId(), ecdsa);
      }
      log.push({ primaryType: td.primaryType, digest, message: td.message, signature });
      return Promise.resolve(signature as `0x${string}`);
    },
  };
}

/**
 * Runs `start` (a stock client call) with the client's clock at the chain's latest block: the stock clients read
 * Date.now() synchronously before their first await for a payload's validity window, and the tests move chain time
 * (a channel's withdraw delay), so the window must be the chain's, as it is against a live chain.
 */
export async function atChainTime<T>(start: () => Promise<T>): Promise<T> {
  const now = (await time.latest()) * 1000;
  const wallClock = Date.now;
  Date.now = () => now;
  let started: Promise<T>;
  try {
    started = start();
  } finally {
    Date.now = wallClock;
  }
  return started;
}

/** The receiver authorizer of every test channel (channelConfig's default): it signs the seller's claims and refunds. */
export const RECEIVER_AUTHORIZER = ethers.Wallet.createRandom();

/** A channel from the wallet to `receiver`, as the stock client builds it (payerAuthorizer 0: the wallet signs). */
export function channelConfig(
  payer: string,
  receiver: string,
  token: string,
  over: Partial<ChannelConfigFields> = {},
): ChannelConfigFields {
  return {
    payer,
    payerAuthorizer: ZeroAddress,
    receiver,
    receiverAuthorizer: RECEIVER_AUTHORIZER.address,
    token,
    withdrawDelay: 900,
    salt: hexlify(randomBytes(32)),
    ...over,
  };
}

export function channelIdOf(config: ChannelConfigFields): string {
  return computeChannelId(config as Parameters<typeof computeChannelId>[0], NETWORK);
}

/** Payment requirements of a seller paid in `token` (the stock clients read asset, payTo, amount, extra). */
export function requirements(
  scheme: string,
  token: string,
  payTo: string,
  amount: bigint,
  extra: Record<string, unknown> = {},
): PaymentRequirements {
  return {
    scheme,
    network: NETWORK,
    asset: token,
    amount: amount.toString(),
    payTo,
    maxTimeoutSeconds: 1800,
    extra: { name: "USD Coin", version: "2", ...extra },
  };
}

/**
 * The schemes fixture: policyFixture, the sandbox scheme contracts at their canonical addresses (the channel contract
 * as `batch`), and Permit2's address as a signer (the upto tests pull as Permit2 would).
 */
export async function schemesFixture() {
  const f = await policyFixture();
  await placeX402SchemeContracts(hre.network.provider);
  const batch = await ethers.getContractAt("X402BatchSettlement", BATCH_SETTLEMENT);
  await impersonateAccount(PERMIT2);
  await setBalance(PERMIT2, 10n ** 18n);
  const permit2 = await ethers.getSigner(PERMIT2);
  const schemes = await ethers.getContractAt("SpendPolicySchemes", f.agent);
  return { ...f, batch, permit2, schemes };
}

/** The largest voucher: the seller may ask the wallet for any cumulative amount; the channel bounds the claim. */
export const MAX_VOUCHER = 2n ** 128n - 1n;

/**
 * schemesFixture with the owner's payee pinned for api.example.com (only channels to the merchant may open), and
 * the actions of a channel's life on the channel contract: the stock client's deposit authorised by the operator and
 * landed by a facilitator (`deployer`) through the ERC-3009 collector, the seller's claims and refunds, settle.
 */
export async function channelFixture() {
  const f = await schemesFixture();
  // The owner pinned who api.example.com is paid: only channels to that receiver may be opened.
  const payees = { [CHANNEL_HOST]: f.merchant.address };
  await f.setPolicy({ merchants: merchantsOf(ALLOWLIST, {}, payees) });
  const { leaf, proof } = proofFor(ALLOWLIST, CHANNEL_HOST, {}, payees);
  const facilitator = f.batch.connect(f.deployer);

  /**
   * The stock client's deposit payload for `config`, signed by the wallet, then authorised by the operator with the
   * merchant's leaf (`proved`: another one, after a policy that caps the entry, say).
   */
  async function deposit(
    amount: bigint,
    config: ChannelConfigFields = channelConfig(f.agent, f.merchant.address, f.tokenAddress),
    id: string = paymentId(),
    proved: { leaf: typeof leaf; proof: string[] } = { leaf, proof },
  ) {
    const log: Signed[] = [];
    const signer = walletClientSigner(f.agent, f.agentKey, () => id, log);
    const req = requirements("batch-settlement", f.tokenAddress, config.receiver, amount);
    const result = await atChainTime(() =>
      createBatchSettlementEIP3009DepositPayload(signer, 2, req, config as never, amount.toString(), "1"),
    );
    const auth = (result.payload as { deposit: { authorization: { erc3009Authorization: Record<string, string> } } }).deposit.authorization
      .erc3009Authorization;
    const values = { amount, validAfter: BigInt(auth.validAfter), validBefore: BigInt(auth.validBefore), nonceSalt: auth.salt };
    const receive = log.find((s) => s.primaryType === "ReceiveWithAuthorization")!;
    const tx = f.schemes.connect(f.operator).authorizeDeposit(id, CHANNEL_HOST, proved.leaf, proved.proof, config, values, NO_APPROVAL);
    const channelId = channelIdOf(config);
    // What the stock facilitator sends: the channel's deposit through the ERC-3009 collector, which redeems the
    // wallet's ReceiveWithAuthorization (the wallet answers ERC-1271) and hands the USDC to the channel.
    const collectorData = AbiCoder.defaultAbiCoder().encode(
      ["uint256", "uint256", "uint256", "bytes"],
      [values.validAfter, values.validBefore, BigInt(auth.salt), auth.signature],
    );
    const land = () => facilitator.deposit(config, amount, ERC3009_DEPOSIT_COLLECTOR, collectorData);
    return { id, tx, config, channelId, values, receive, signer, log, land };
  }

  /**
   * The seller's claim of `totalClaimed` (cumulative) on `config`, with the stock client's Voucher for `maxClaimable`
   * signed through the wallet (payerAuthorizer 0: the channel asks the wallet's ERC-1271), the claim batch signed by
   * the receiver authorizer and relayed by the facilitator.
   */
  async function claim(config: ChannelConfigFields, totalClaimed: bigint, maxClaimable: bigint = MAX_VOUCHER) {
    const voucher = await signVoucher(
      walletClientSigner(f.agent, f.agentKey, paymentId),
      channelIdOf(config) as `0x${string}`,
      maxClaimable.toString(),
      NETWORK,
    );
    const rows = [{ voucher: { channel: config, maxClaimableAmount: maxClaimable }, signature: voucher.signature, totalClaimed }];
    return facilitator.claimWithSignature(rows, await signClaimBatch(RECEIVER_AUTHORIZER, rows));
  }

  /** The receiver authorizer's signed refund of `amount` of `config` (at the channel's refund nonce), relayed. */
  async function refund(config: ChannelConfigFields, amount: bigint) {
    const channelId = channelIdOf(config);
    const signature = await signRefund(RECEIVER_AUTHORIZER, channelId, await f.batch.refundNonce(channelId), amount);
    return facilitator.refundWithSignature(config, amount, await f.batch.refundNonce(channelId), signature);
  }

  /** Pays the seller everything claimed for it (the channel's USDC leaves to the receiver). */
  const settle = () => facilitator.settle(f.merchant.address, f.tokenAddress);

  /** The channel contract's [balance, totalClaimed] of `channelId`. */
  const onChain = async (channelId: string) => {
    const [balance, totalClaimed] = await f.batch.channels(channelId);
    return { balance, totalClaimed };
  };
  return { ...f, leaf, proof, payees, deposit, claim, refund, settle, onChain };
}
