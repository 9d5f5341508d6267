/**
 * Builders for the wallet's x402 scheme tests (batch-settlement deposits and vouchers, upto ceilings): the agent
 * wallet as a stock @x402/evm client signer (every digest is the one the stock client computes, answered with the
 * wallet's signature formats), channel configs, and the chain actors the tests stand in for (the deposit collector,
 * Permit2, the channel contract's view) until the sandbox scheme contracts land.
 */
import hre from "hardhat";
import { impersonateAccount, setBalance } from "@nomicfoundation/hardhat-network-helpers";
import { type SigningKey, ZeroAddress, getAddress, hexlify, randomBytes, toBeHex, zeroPadValue } from "ethers";
import { hashTypedData, type TypedDataDefinition } from "viem";
import type { ClientEvmSigner } from "@x402/evm";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import type { PaymentRequirements } from "@x402/core/types";
import { walletSignature } from "../../src/chain/typedData";
import { createBatchSettlementEIP3009DepositPayload } from "@x402/evm/batch-settlement/client";
import { allowlistRoot } from "../../src/policy/allowlist";
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

export interface ChannelConfigValues {
  payer: string;
  payerAuthorizer: string;
  receiver: string;
  receiverAuthorizer: string;
  token: string;
  withdrawDelay: number;
  salt: string;
}

/** A channel from the wallet to `receiver`, as the stock client builds it (payerAuthorizer 0: the wallet signs). */
export function channelConfig(
  payer: string,
  receiver: string,
  token: string,
  over: Partial<ChannelConfigValues> = {},
): ChannelConfigValues {
  return {
    payer,
    payerAuthorizer: ZeroAddress,
    receiver,
    receiverAuthorizer: ethers.Wallet.createRandom().address,
    token,
    withdrawDelay: 900,
    salt: hexlify(randomBytes(32)),
    ...over,
  };
}

export function channelIdOf(config: ChannelConfigValues): string {
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

/** The schemes fixture: policyFixture, the channel contract's view at its canonical address, the actors as signers. */
export async function schemesFixture() {
  const f = await policyFixture();
  const double = await ethers.deployContract("ChannelBalancesDouble");
  await hre.network.provider.send("hardhat_setCode", [BATCH_SETTLEMENT, await ethers.provider.getCode(await double.getAddress())]);
  const channels = await ethers.getContractAt("ChannelBalancesDouble", BATCH_SETTLEMENT);
  const actor = async (address: string) => {
    await impersonateAccount(address);
    await setBalance(address, 10n ** 18n);
    return ethers.getSigner(address);
  };
  const collector = await actor(ERC3009_DEPOSIT_COLLECTOR);
  const permit2 = await actor(PERMIT2);
  const channelContract = await actor(BATCH_SETTLEMENT);
  const schemes = await ethers.getContractAt("SpendPolicySchemes", f.agent);
  return { ...f, channels, collector, permit2, channelContract, schemes };
}

/**
 * schemesFixture with the owner's payee pinned for api.example.com (only channels to the merchant may open), and
 * the actions of a channel's life: the stock client's deposit authorised by the operator and landed by the collector,
 * the channel's balance, a refund.
 */
export async function channelFixture() {
  const f = await schemesFixture();
  // The owner pinned who api.example.com is paid: only channels to that receiver may be opened.
  const payees = { [CHANNEL_HOST]: f.merchant.address };
  await f.setPolicy({ allowlistRoot: allowlistRoot(ALLOWLIST, {}, "v3", payees) });
  const { leaf, proof } = proofFor(ALLOWLIST, CHANNEL_HOST, {}, "v3", payees);

  /** The stock client's deposit payload for `config`, signed by the wallet, then authorised by the operator. */
  async function deposit(
    amount: bigint,
    config: ChannelConfigValues = channelConfig(f.agent, f.merchant.address, f.tokenAddress),
    id: string = paymentId(),
  ) {
    const log: Signed[] = [];
    const signer = walletClientSigner(f.agent, f.agentKey, () => id, log);
    const req = requirements("batch-settlement", f.tokenAddress, config.receiver, amount);
    const result = await createBatchSettlementEIP3009DepositPayload(signer, 2, req, config as never, amount.toString(), "1");
    const auth = (result.payload as { deposit: { authorization: { erc3009Authorization: Record<string, string> } } }).deposit.authorization
      .erc3009Authorization;
    const values = { amount, validAfter: BigInt(auth.validAfter), validBefore: BigInt(auth.validBefore), nonceSalt: auth.salt };
    const receive = log.find((s) => s.primaryType === "ReceiveWithAuthorization")!;
    const tx = f.schemes.connect(f.operator).authorizeDeposit(id, CHANNEL_HOST, leaf, proof, config, values, NO_APPROVAL);
    const channelId = channelIdOf(config);
    /** The deposit collector redeems the wallet's ReceiveWithAuthorization, as the channel contract has it do. */
    const land = async () =>
      f.token
        .connect(f.collector)
        ["receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
          f.agent,
          await f.collector.getAddress(),
          amount,
          values.validAfter,
          values.validBefore,
          receive.message.nonce as string,
          receive.signature,
        );
    return { id, tx, config, channelId, values, receive, signer, log, land };
  }

  /** The channel (its collector's USDC forwarded to it) now holds `balance`, `claimed` of it claimed. */
  async function channelHolds(channelId: string, balance: bigint, claimed = 0n) {
    await (await f.channels.setChannel(channelId, balance, claimed)).wait();
  }

  /** The channel pays `amount` back to the wallet (a refund or a finalised withdrawal). */
  async function refund(amount: bigint) {
    await (await f.token.connect(f.channelContract).transfer(f.agent, amount)).wait();
  }

  // The channel contract holds what the collector received (forwarded when a test needs it).
  const forward = async (amount: bigint) => (await f.token.connect(f.collector).transfer(BATCH_SETTLEMENT, amount)).wait();
  return { ...f, leaf, proof, payees, deposit, channelHolds, refund, forward };
}
