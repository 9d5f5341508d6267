/**
 * batch-settlement payments as the stock @x402/evm client builds them, signed through the agent wallet: the channel's
 * config and id, a deposit (USDC ReceiveWithAuthorization to the ERC-3009 deposit collector, with the first voucher)
 * and a voucher alone. The channel's state is SpendGate's own (src/payments/schemes/channel.ts), not the stock client's
 * in-memory one, so these are the client's building blocks, not its class.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentPayload, PaymentPayloadResult, SchemeNetworkClient } from "@x402/core/types";
import {
  buildChannelConfig,
  computeChannelId,
  createBatchSettlementEIP3009DepositPayload,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import type { ClientEvmSigner } from "@x402/evm";
import { getAddress } from "../../chain/rpc/checksum";
import type { ChannelConfigInput, ChannelDepositInput } from "../../chain/schemeOps";
import type { Quote } from "../../x402/pick";

const ZERO_SALT = `0x${"0".repeat(64)}` as const;
const NO_AUTHORIZER = "0x0000000000000000000000000000000000000000" as const;

export interface ChannelPaymentSigned {
  payload: PaymentPayload;
  headers: Record<string, string>;
}

/**
 * The channel the wallet pays `quote`'s seller through: payer the wallet, payerAuthorizer 0 (every voucher needs the
 * wallet's ERC-1271 answer), the seller's receiver, receiver authorizer and withdraw delay, salt 0 (one channel per
 * seller and terms). Its id is the config's EIP-712 hash under the channel contract's domain.
 */
export function channelOf(signer: ClientEvmSigner, quote: Quote): { config: ChannelConfigInput; channelId: string } {
  // Every field buildChannelConfig and computeChannelId read: the same seller's terms give the same channel, which is
  // derived (two EIP-712 hashes and five checksums) once per instance, not once per voucher.
  const r = quote.requirement;
  const extra = r.extra as { receiverAuthorizer?: unknown; withdrawDelay?: unknown } | undefined;
  const delay = typeof extra?.withdrawDelay === "number" ? extra.withdrawDelay : null;
  const key = JSON.stringify([signer.address, r.network, r.payTo, r.asset, String(extra?.receiverAuthorizer), delay]);
  const known = derived.get(key);
  if (known) return known;
  const channel = deriveChannel(signer, quote);
  Object.freeze(channel.config); // shared by every payment through the channel
  if (derived.size >= MAX_DERIVED) derived.clear();
  derived.set(key, channel);
  return channel;
}

const MAX_DERIVED = 10_000;
const derived = new Map<string, { config: ChannelConfigInput; channelId: string }>();

function deriveChannel(signer: ClientEvmSigner, quote: Quote): { config: ChannelConfigInput; channelId: string } {
  const config = buildChannelConfig(
    { signer, storage: undefined as never, salt: ZERO_SALT, payerAuthorizer: NO_AUTHORIZER },
    quote.requirement,
  );
  const channelId = computeChannelId(config, quote.requirement.network).toLowerCase();
  return {
    channelId,
    config: {
      payer: getAddress(config.payer),
      payerAuthorizer: getAddress(config.payerAuthorizer),
      receiver: getAddress(config.receiver),
      receiverAuthorizer: getAddress(config.receiverAuthorizer),
      token: getAddress(config.token),
      withdrawDelay: config.withdrawDelay,
      salt: config.salt,
    },
  };
}

/** The x402 envelope of a scheme payload for `quote` (resource, accepted requirement, extensions), and its header. */
async function envelope(quote: Quote, result: PaymentPayloadResult): Promise<ChannelPaymentSigned> {
  const scheme: SchemeNetworkClient = { scheme: "batch-settlement", createPaymentPayload: () => Promise.resolve(result) };
  const client = new x402Client();
  client.register(quote.requirement.network, scheme);
  client.setSpendControls(false); // the on-chain policy is the spend control
  const http = new x402HTTPClient(client);
  const payload = await http.createPaymentPayload({ ...quote.paymentRequired, accepts: [quote.requirement] });
  return { payload, headers: http.encodePaymentSignatureHeader(payload) };
}

/** A deposit of `amount` into the channel with the voucher for cumulative `maxClaimable` (the request's). */
export async function signDeposit(
  signer: ClientEvmSigner,
  quote: Quote,
  config: ChannelConfigInput,
  amount: bigint,
  maxClaimable: bigint,
  validitySeconds: number,
): Promise<ChannelPaymentSigned & { deposit: ChannelDepositInput }> {
  const requirement = { ...quote.requirement, maxTimeoutSeconds: validitySeconds };
  const result = await createBatchSettlementEIP3009DepositPayload(
    signer,
    2,
    requirement,
    stockConfig(config),
    amount.toString(),
    maxClaimable.toString(),
  );
  const auth = (result.payload as { deposit?: { authorization?: { erc3009Authorization?: Record<string, string> } } }).deposit
    ?.authorization?.erc3009Authorization;
  if (!auth) throw new Error("the batch-settlement client produced a deposit without an ERC-3009 authorisation");
  const deposit = { amount, validAfter: BigInt(auth.validAfter), validBefore: BigInt(auth.validBefore), nonceSalt: auth.salt };
  return { ...(await envelope(quote, result)), deposit };
}

/** A voucher alone: cumulative `maxClaimable` on `channelId`, signed locally (no chain round trip). */
export async function signVoucherPayment(
  signer: ClientEvmSigner,
  quote: Quote,
  config: ChannelConfigInput,
  channelId: string,
  maxClaimable: bigint,
): Promise<ChannelPaymentSigned> {
  const voucher = await signVoucher(signer, channelId as `0x${string}`, maxClaimable.toString(), quote.requirement.network);
  return envelope(quote, { x402Version: 2, payload: { type: "voucher", channelConfig: stockConfig(config), voucher } });
}

function stockConfig(c: ChannelConfigInput) {
  return {
    ...c,
    payer: c.payer as `0x${string}`,
    payerAuthorizer: c.payerAuthorizer as `0x${string}`,
    receiver: c.receiver as `0x${string}`,
    receiverAuthorizer: c.receiverAuthorizer as `0x${string}`,
    token: c.token as `0x${string}`,
    salt: c.salt as `0x${string}`,
  };
}

/** What the seller reports it charged for a request (PAYMENT-RESPONSE extra.chargedAmount), at most `max`. */
export function chargedOf(extra: unknown, max: bigint): bigint {
  const raw = (extra as { chargedAmount?: unknown } | null | undefined)?.chargedAmount;
  if (typeof raw !== "string" || !/^\d{1,30}$/.test(raw)) return max;
  const v = BigInt(raw);
  return v < max ? v : max;
}
