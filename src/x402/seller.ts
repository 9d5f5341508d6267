/**
 * SpendGate as an x402 seller (GET|POST /sell/agent-intel): the challenge in both protocol versions, and a paid
 * request checked against exactly one of our requirements, verified and settled through that network's facilitator,
 * answered with the payer's portfolio read from that network's chain. Refusals are 402 answers carrying the reason
 * (x402 convention), never 500s; an unreachable facilitator is a 502 (AppError upstream_error).
 *
 * Wire choices:
 * - One requirement per network the service runs (its offers, the first one first): the v2 PAYMENT-REQUIRED header
 *   (base64 JSON) names each by its CAIP-2 id ("eip155:8453"); the v1 JSON body `{ x402Version: 1, error, accepts }`
 *   by its x402 v1 name ("base"), for the networks x402 v1 names. Each advertises exact, that network's USDC with its
 *   own EIP-712 domain (the network table's: "USD Coin" on Base, "USDC" on Base Sepolia), SELL_PRICE and one payTo.
 * - X-Service-Network is the first network's name ("base"), X-Service-Chain-Id its chain id; the paid resource's
 *   `agent.network` and `payment.network` name the network that was paid on.
 * - payTo (X-Service-Receiver) is SELL_PAY_TO, or the operator's address when unset: an address the service
 *   controls on every deployment, in-process or remote facilitator alike.
 * - A payment is read from PAYMENT-SIGNATURE (v2 clients) or X-PAYMENT (v1 clients, and the interface's name); the
 *   payload's own x402Version decides which requirement it is checked against. The settlement is answered in
 *   PAYMENT-RESPONSE for PAYMENT-SIGNATURE and X-PAYMENT-RESPONSE for X-PAYMENT.
 * - With its signatures (sellerSignatures.ts), every 402 carries a signed offer of each requirement and every settled
 *   answer a signed receipt (x402 offer-receipt, docs/receipts.md); a settlement still pending after one retry is
 *   answered 402 with its PAYMENT-RESPONSE (settlement_pending and the hash).
 */
import { formatEther } from "ethers";
import { getAddress } from "../chain/rpc/checksum";
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { isPaymentPayloadV1, isPaymentPayloadV2 } from "@x402/core/schemas";
import type {
  PaymentPayload,
  PaymentPayloadV1,
  PaymentRequired,
  PaymentRequirements,
  PaymentRequirementsV1,
  SettleResponse,
} from "@x402/core/types";
import { OFFER_RECEIPT } from "@x402/extensions/offer-receipt";
import { fromBaseUnits, toBaseUnits } from "../amounts";
import type { Network } from "../chain/networks";
import { upstreamError } from "../errors";
import type { AnyPaymentPayload, AnyPaymentRequirements, Facilitator } from "./facilitator";
import { type Authorization, Refusal, authorizationOf, sameAddress } from "./sellerPayload";
import type { SellerSignatures } from "./sellerSignatures";

export interface SellerConfig {
  /** Decimal USDC price ("0.01"). */
  price: string;
  payTo: string;
  description?: string;
}

/** What the seller reads from a chain: the payer's USDC (base units) and native coin (wei), in one round trip. */
export interface SellerChain {
  holdings(address: string): Promise<{ usdc: bigint; eth: bigint }>;
}

/** The seller on one network: its USDC (USDC_ADDRESS may override the table's), explorer, facilitator and chain. */
export interface SellerOffer {
  network: Network;
  usdcAddress: string;
  explorerUrl: string;
  facilitator: Facilitator;
  chain: SellerChain;
}

export interface SellerRequest {
  /** Full URL of the resource (goes into the challenge). */
  resourceUrl: string;
  /** PAYMENT-SIGNATURE header (v2). */
  paymentSignature?: string;
  /** X-PAYMENT header (v1). */
  xPayment?: string;
}

export interface SellerAnswer {
  status: 200 | 402;
  headers: Record<string, string>;
  body: unknown;
}

interface SellerLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

const MAX_TIMEOUT_SECONDS = 300;
const MAX_HEADER_CHARS = 8_192;

const PENDING = "settlement_pending";

/** USDC's EIP-712 domain on an offer's network: what the buyer's signature is made under (the table's, exactly). */
const usdcExtra = (o: SellerOffer) => ({ name: o.network.usdc.name, version: o.network.usdc.version });

export class AgentIntelSeller {
  readonly price: bigint;
  /** EIP-3009 nonces being verified/settled right now: a concurrent copy is refused without a second settle. */
  private readonly inFlight = new Set<string>();

  constructor(
    readonly config: SellerConfig,
    /** One per network, the first one first (the X-Service-* headers name it). */
    private readonly offers: readonly [SellerOffer, ...SellerOffer[]],
    private readonly logger?: SellerLogger,
    /** Signs the offers of every 402 and a receipt of every settled payment (x402 offer-receipt), when given. */
    private readonly signatures?: SellerSignatures,
  ) {
    this.price = toBaseUnits(config.price);
  }

  requirementsV2(offer: SellerOffer = this.offers[0]): PaymentRequirements {
    return {
      scheme: "exact",
      network: offer.network.caip2,
      asset: offer.usdcAddress,
      amount: this.price.toString(),
      payTo: this.config.payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra: usdcExtra(offer),
    };
  }

  /** The v1 requirement of an offer whose network x402 v1 names. */
  requirementsV1(resourceUrl: string, offer: SellerOffer & { network: { x402V1: string } }): PaymentRequirementsV1 {
    return {
      scheme: "exact",
      network: offer.network.x402V1 as PaymentRequirementsV1["network"],
      maxAmountRequired: this.price.toString(),
      resource: resourceUrl,
      description: this.description,
      mimeType: "application/json",
      outputSchema: {},
      payTo: this.config.payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      asset: offer.usdcAddress,
      extra: usdcExtra(offer),
    };
  }

  private get v1Offers() {
    return this.offers.filter((o): o is SellerOffer & { network: { x402V1: string } } => o.network.x402V1 !== null);
  }

  private get description(): string {
    const names = this.offers.map((o) => o.network.displayName).join(" or ");
    return this.config.description ?? `Agent intel: the paying agent's portfolio on ${names}, read from chain.`;
  }

  /**
   * The 402: v1 JSON body, v2 PAYMENT-REQUIRED header and the X-Service-* headers; with signed offers of every
   * requirement in both (`extensions["offer-receipt"]`), and `extraHeaders` (a pending settlement's PAYMENT-RESPONSE).
   */
  async challenge(
    resourceUrl: string,
    error = "X-PAYMENT header is required",
    message?: string,
    extraHeaders: Record<string, string> = {},
  ): Promise<SellerAnswer> {
    const accepts = this.offers.map((o) => this.requirementsV2(o));
    const signed = this.signatures ? await this.signatures.offersFor(resourceUrl, accepts) : null;
    const extensions = signed ? { extensions: { [OFFER_RECEIPT]: { info: { offers: signed } } } } : {};
    const v2: PaymentRequired = {
      x402Version: 2,
      error,
      resource: { url: resourceUrl, description: this.description, mimeType: "application/json" },
      accepts,
      ...extensions,
    };
    const first = this.offers[0];
    return {
      status: 402,
      headers: {
        ...extraHeaders,
        "PAYMENT-REQUIRED": encodePaymentRequiredHeader(v2),
        "X-Service-Amount": fromBaseUnits(this.price),
        "X-Service-Network": first.network.name,
        "X-Service-Chain-Id": String(first.network.chainId),
        "X-Service-Token": first.usdcAddress,
        "X-Service-Receiver": this.config.payTo,
        "Cache-Control": "no-store",
      },
      body: {
        x402Version: 1,
        error,
        ...(message ? { message } : {}),
        accepts: this.v1Offers.map((o) => this.requirementsV1(resourceUrl, o)),
        ...extensions,
      },
    };
  }

  /** Answers one request: challenge, refusal (402 with the reason) or the paid resource. */
  async handle(req: SellerRequest): Promise<SellerAnswer> {
    const raw = req.paymentSignature || req.xPayment;
    if (!raw) return this.challenge(req.resourceUrl);
    const responseHeader = req.paymentSignature ? "PAYMENT-RESPONSE" : "X-PAYMENT-RESPONSE";
    let nonce: string | undefined;
    try {
      const { offer, payload, requirements, auth } = this.check(raw, req.resourceUrl);
      nonce = auth.nonce.toLowerCase();
      if (this.inFlight.has(nonce)) {
        nonce = undefined;
        throw new Refusal("payment_in_progress", "This payment is already being settled by another request.");
      }
      this.inFlight.add(nonce);
      return await this.settle(offer, payload, requirements, auth, responseHeader, req.resourceUrl);
    } catch (err) {
      if (err instanceof Refusal) {
        const pending = err.pending ? { [responseHeader]: encodePaymentResponseHeader(err.pending) } : {};
        return await this.challenge(req.resourceUrl, err.reason, err.message, pending);
      }
      throw err;
    } finally {
      if (nonce) this.inFlight.delete(nonce);
    }
  }

  /** Decodes the header and checks the payload pays exactly our requirement (scheme, network, asset, amount, payTo). */
  private check(
    raw: string,
    resourceUrl: string,
  ): { offer: SellerOffer; payload: AnyPaymentPayload; requirements: AnyPaymentRequirements; auth: Authorization } {
    if (raw.length > MAX_HEADER_CHARS) throw new Refusal("invalid_payload", "The payment header is too long.");
    let decoded: unknown;
    try {
      decoded = decodePaymentSignatureHeader(raw.trim());
    } catch {
      throw new Refusal("invalid_payload", "The payment header is not base64-encoded x402 JSON.");
    }
    const version = (decoded as { x402Version?: unknown } | null)?.x402Version;
    let offer: SellerOffer | undefined;
    let payload: AnyPaymentPayload;
    let requirements: AnyPaymentRequirements;
    if (version === 2 && isPaymentPayloadV2(decoded)) {
      const p = decoded as PaymentPayload;
      const a = p.accepted;
      if (a.scheme !== "exact") throw new Refusal("unsupported_scheme", `Only the exact scheme is accepted, not ${a.scheme}.`);
      offer = this.offers.find((o) => o.network.caip2 === a.network);
      if (!offer)
        throw this.otherNetwork(
          this.offers.map((o) => o.network.caip2),
          a.network,
        );
      if (!sameAddress(a.asset, offer.usdcAddress)) {
        throw new Refusal("invalid_payment_requirements", `Pay in USDC (${offer.usdcAddress}), not ${a.asset}.`);
      }
      if (a.amount !== this.price.toString()) {
        throw new Refusal("invalid_payment_requirements", `The price is ${this.price} base units, not ${a.amount}.`);
      }
      if (!sameAddress(a.payTo, this.config.payTo)) {
        throw new Refusal("invalid_payment_requirements", `Pay to ${this.config.payTo}, not ${a.payTo}.`);
      }
      payload = p;
      requirements = this.requirementsV2(offer);
    } else if (version === 1 && isPaymentPayloadV1(decoded)) {
      const p = decoded as PaymentPayloadV1;
      if (p.scheme !== "exact") throw new Refusal("unsupported_scheme", `Only the exact scheme is accepted, not ${p.scheme}.`);
      const v1 = this.v1Offers.find((o) => o.network.x402V1 === (p.network as string));
      if (!v1)
        throw this.otherNetwork(
          this.v1Offers.map((o) => o.network.x402V1),
          p.network,
        );
      offer = v1;
      payload = p;
      requirements = this.requirementsV1(resourceUrl, v1);
    } else if (version !== 1 && version !== 2) {
      throw new Refusal("invalid_x402_version", "The payment must be an x402 version 1 or 2 payload.");
    } else {
      throw new Refusal("invalid_payload", "The payment payload does not have the x402 shape.");
    }
    const auth = authorizationOf(payload);
    if (BigInt(auth.value) !== this.price) {
      throw new Refusal(
        "invalid_exact_evm_payload_authorization_value_mismatch",
        `The authorization is for ${auth.value} base units; the price is ${this.price}.`,
      );
    }
    if (!sameAddress(auth.to, this.config.payTo)) {
      throw new Refusal("invalid_exact_evm_recipient_mismatch", `The authorization pays ${auth.to}, not ${this.config.payTo}.`);
    }
    return { offer, payload, requirements, auth };
  }

  private otherNetwork(ours: string[], theirs: string): Refusal {
    return new Refusal("invalid_network", `Pay on ${ours.join(" or ") || "a network of x402 v2"}, not ${theirs}.`);
  }

  private async settle(
    offer: SellerOffer,
    payload: AnyPaymentPayload,
    requirements: AnyPaymentRequirements,
    auth: Authorization,
    responseHeader: string,
    resourceUrl: string,
  ): Promise<SellerAnswer> {
    let settled: SettleResponse;
    try {
      const verified = await offer.facilitator.verify(payload, requirements);
      if (!verified.isValid) {
        throw new Refusal(verified.invalidReason ?? "invalid_payment", verified.invalidMessage ?? "The facilitator refused the payment.");
      }
      settled = await offer.facilitator.settle(payload, requirements);
      // Broadcast, not yet confirmed: asked once more, as stock resource servers do (the facilitator's pending store
      // reconciles against the transaction already sent), then answered as pending with its hash.
      if (!settled.success && settled.errorReason === PENDING && settled.transaction) {
        const first = settled; // broadcast: a retry that fails is still this pending settlement, never "nothing charged"
        settled = await offer.facilitator.settle(payload, requirements).catch(() => first);
      }
    } catch (err) {
      if (err instanceof Refusal) throw err;
      this.logger?.error({ err, payer: auth.from }, "seller: facilitator unreachable");
      throw upstreamError("The payment facilitator could not be reached; nothing was charged. Try again later.");
    }
    if (!settled.success || !settled.transaction) {
      const pending = settled.errorReason === PENDING && settled.transaction ? settled : undefined;
      throw new Refusal(settled.errorReason ?? "settlement_failed", settled.errorMessage ?? "The payment did not settle.", pending);
    }
    const payer = getAddress(auth.from.toLowerCase()); // the signer of the authorization the facilitator verified
    const txHash = settled.transaction;
    const receipt = await this.signatures?.receipt(resourceUrl, payer, offer.network.caip2, txHash).catch((err: unknown) => {
      this.logger?.error({ err, payer }, "seller: the receipt could not be signed");
      return undefined;
    });
    const response = receipt ? { ...settled, extensions: { [OFFER_RECEIPT]: { info: { receipt } } } } : settled;
    return {
      status: 200,
      headers: { [responseHeader]: encodePaymentResponseHeader(response), "Cache-Control": "no-store" },
      body: {
        agent: { address: payer, network: offer.network.name, chainId: offer.network.chainId },
        portfolio: await this.portfolio(offer, payer),
        payment: {
          status: "settled",
          txHash,
          network: offer.network.name,
          token: "USDC",
          amount: fromBaseUnits(this.price),
          payer,
          explorer: `${offer.explorerUrl}/tx/${txHash}`,
        },
      },
    };
  }

  /** The payer's holdings after payment; USDC valued at 1 USD, the native coin listed unpriced (no price oracle). */
  private async portfolio(offer: SellerOffer, payer: string) {
    try {
      const { usdc, eth } = await offer.chain.holdings(payer);
      const usdcDecimal = fromBaseUnits(usdc);
      return {
        totalValueUsd: usdcDecimal,
        tokens: [
          { symbol: "USDC", address: offer.usdcAddress, balance: usdcDecimal, valueUsd: usdcDecimal },
          { symbol: offer.network.nativeCurrency.symbol, balance: formatEther(eth) },
        ],
      };
    } catch (err) {
      // The payment is settled: answer it even when the chain read fails.
      this.logger?.warn({ err, payer }, "seller: portfolio read failed");
      return { totalValueUsd: null, tokens: [], error: "chain_unavailable" };
    }
  }
}
