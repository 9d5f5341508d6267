/**
 * SpendGate as an x402 seller (GET|POST /sell/agent-intel): the challenge in both protocol versions, and a paid
 * request checked against exactly our requirement, verified and settled through our facilitator, answered with the
 * payer's portfolio read from chain. Refusals are 402 answers carrying the reason (x402 convention), never 500s; an
 * unreachable facilitator is a 502 (AppError upstream_error).
 *
 * Wire choices:
 * - 402 body: v1 `{ x402Version: 1, error, accepts }` (network name "base"); header PAYMENT-REQUIRED: v2, base64
 *   JSON (network "eip155:8453"). Both advertise the same payment: exact, USDC, SELL_PRICE, one payTo.
 * - X-Service-Network is the network name (NETWORK_NAME, "base"), the same name as `agent.network` and
 *   `payment.network` in the paid resource; X-Service-Chain-Id carries the chain id (8453).
 * - payTo (X-Service-Receiver) is SELL_PAY_TO, or the operator's address when unset: an address the service
 *   controls on every deployment, in-process or remote facilitator alike.
 * - A payment is read from PAYMENT-SIGNATURE (v2 clients) or X-PAYMENT (v1 clients, and the interface's name); the
 *   payload's own x402Version decides which requirement it is checked against. The settlement is answered in
 *   PAYMENT-RESPONSE for PAYMENT-SIGNATURE and X-PAYMENT-RESPONSE for X-PAYMENT.
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
import { fromBaseUnits, toBaseUnits } from "../amounts";
import { upstreamError } from "../errors";
import type { AnyPaymentPayload, AnyPaymentRequirements, Facilitator } from "./facilitator";

export interface SellerConfig {
  chainId: number;
  /** Network name used in headers and the resource ("base"). */
  networkName: string;
  usdcAddress: string;
  /** Decimal USDC price ("0.01"). */
  price: string;
  payTo: string;
  explorerUrl: string;
  description?: string;
}

/** What the seller reads from chain: the payer's USDC (base units) and ETH (wei), in one round trip. */
export interface SellerChain {
  holdings(address: string): Promise<{ usdc: bigint; eth: bigint }>;
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

/** v1 network names by chain id (the x402 v1 wire names). */
const V1_NETWORKS: Record<number, string> = { 8453: "base", 84532: "base-sepolia" };
const USDC_EXTRA = { name: "USD Coin", version: "2" };
const MAX_TIMEOUT_SECONDS = 300;
const MAX_HEADER_CHARS = 8_192;

type Authorization = { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };

/** A refusal: reason code (x402 style) plus a sentence for people. */
class Refusal {
  constructor(
    readonly reason: string,
    readonly message: string,
  ) {}
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const MAX_UINT256 = 2n ** 256n - 1n;
const isUint256 = (v: unknown): v is string => typeof v === "string" && /^\d{1,78}$/.test(v) && BigInt(v) <= MAX_UINT256;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})+$/;

/**
 * The EIP-3009 authorization and signature of an exact EVM payload, checked for shape before anything reaches the
 * facilitator (which would otherwise throw on them, and that reads as "unreachable"): addresses, decimal uint256
 * value/validAfter/validBefore, a 32-byte hex nonce and a hex signature.
 */
function authorizationOf(payload: AnyPaymentPayload): Authorization {
  const inner = payload.payload as { authorization?: Partial<Record<keyof Authorization, unknown>>; signature?: unknown } | undefined;
  const auth = inner?.authorization;
  if (!auth || typeof auth !== "object") throw new Refusal("invalid_payload", "The payment carries no EIP-3009 authorization.");
  const { from, to, value, validAfter, validBefore, nonce } = auth;
  const bad = (field: string, what: string) => new Refusal("invalid_payload", `The authorization's ${field} must be ${what}.`);
  if (typeof from !== "string" || !ADDRESS.test(from)) throw bad("from", "an address");
  if (typeof to !== "string" || !ADDRESS.test(to)) throw bad("to", "an address");
  if (!isUint256(value)) throw bad("value", "a decimal uint256 string");
  if (!isUint256(validAfter)) throw bad("validAfter", "a decimal uint256 string");
  if (!isUint256(validBefore)) throw bad("validBefore", "a decimal uint256 string");
  if (typeof nonce !== "string" || !BYTES32.test(nonce)) throw bad("nonce", "32 bytes of 0x-prefixed hex");
  if (typeof inner?.signature !== "string" || !HEX_BYTES.test(inner.signature)) {
    throw new Refusal("invalid_payload", "The payment's signature must be 0x-prefixed hex.");
  }
  return { from, to, value, validAfter, validBefore, nonce };
}

const sameAddress = (a: unknown, b: string) => typeof a === "string" && a.toLowerCase() === b.toLowerCase();

export class AgentIntelSeller {
  readonly price: bigint;
  readonly v2Network: string;
  readonly v1Network: string;
  /** EIP-3009 nonces being verified/settled right now: a concurrent copy is refused without a second settle. */
  private readonly inFlight = new Set<string>();

  constructor(
    readonly config: SellerConfig,
    private readonly facilitator: Facilitator,
    private readonly chain: SellerChain,
    private readonly logger?: SellerLogger,
  ) {
    this.price = toBaseUnits(config.price);
    this.v2Network = `eip155:${config.chainId}`;
    this.v1Network = V1_NETWORKS[config.chainId] ?? config.networkName;
  }

  requirementsV2(): PaymentRequirements {
    return {
      scheme: "exact",
      network: this.v2Network as PaymentRequirements["network"],
      asset: this.config.usdcAddress,
      amount: this.price.toString(),
      payTo: this.config.payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra: USDC_EXTRA,
    };
  }

  requirementsV1(resourceUrl: string): PaymentRequirementsV1 {
    return {
      scheme: "exact",
      network: this.v1Network as PaymentRequirementsV1["network"],
      maxAmountRequired: this.price.toString(),
      resource: resourceUrl,
      description: this.description,
      mimeType: "application/json",
      outputSchema: {},
      payTo: this.config.payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      asset: this.config.usdcAddress,
      extra: USDC_EXTRA,
    };
  }

  private get description(): string {
    return this.config.description ?? "Agent intel: the paying agent's portfolio on Base, read from chain.";
  }

  /** The 402: v1 JSON body, v2 PAYMENT-REQUIRED header and the X-Service-* headers. */
  challenge(resourceUrl: string, error = "X-PAYMENT header is required", message?: string): SellerAnswer {
    const v2: PaymentRequired = {
      x402Version: 2,
      error,
      resource: { url: resourceUrl, description: this.description, mimeType: "application/json" },
      accepts: [this.requirementsV2()],
    };
    return {
      status: 402,
      headers: {
        "PAYMENT-REQUIRED": encodePaymentRequiredHeader(v2),
        "X-Service-Amount": fromBaseUnits(this.price),
        "X-Service-Network": this.config.networkName,
        "X-Service-Chain-Id": String(this.config.chainId),
        "X-Service-Token": this.config.usdcAddress,
        "X-Service-Receiver": this.config.payTo,
        "Cache-Control": "no-store",
      },
      body: { x402Version: 1, error, ...(message ? { message } : {}), accepts: [this.requirementsV1(resourceUrl)] },
    };
  }

  /** Answers one request: challenge, refusal (402 with the reason) or the paid resource. */
  async handle(req: SellerRequest): Promise<SellerAnswer> {
    const raw = req.paymentSignature || req.xPayment;
    if (!raw) return this.challenge(req.resourceUrl);
    const responseHeader = req.paymentSignature ? "PAYMENT-RESPONSE" : "X-PAYMENT-RESPONSE";
    let nonce: string | undefined;
    try {
      const { payload, requirements, auth } = this.check(raw, req.resourceUrl);
      nonce = auth.nonce.toLowerCase();
      if (this.inFlight.has(nonce)) {
        nonce = undefined;
        throw new Refusal("payment_in_progress", "This payment is already being settled by another request.");
      }
      this.inFlight.add(nonce);
      return await this.settle(payload, requirements, auth, responseHeader);
    } catch (err) {
      if (err instanceof Refusal) return this.challenge(req.resourceUrl, err.reason, err.message);
      throw err;
    } finally {
      if (nonce) this.inFlight.delete(nonce);
    }
  }

  /** Decodes the header and checks the payload pays exactly our requirement (scheme, network, asset, amount, payTo). */
  private check(
    raw: string,
    resourceUrl: string,
  ): { payload: AnyPaymentPayload; requirements: AnyPaymentRequirements; auth: Authorization } {
    if (raw.length > MAX_HEADER_CHARS) throw new Refusal("invalid_payload", "The payment header is too long.");
    let decoded: unknown;
    try {
      decoded = decodePaymentSignatureHeader(raw.trim());
    } catch {
      throw new Refusal("invalid_payload", "The payment header is not base64-encoded x402 JSON.");
    }
    const version = (decoded as { x402Version?: unknown } | null)?.x402Version;
    let payload: AnyPaymentPayload;
    let requirements: AnyPaymentRequirements;
    if (version === 2 && isPaymentPayloadV2(decoded)) {
      const p = decoded as PaymentPayload;
      const a = p.accepted;
      if (a.scheme !== "exact") throw new Refusal("unsupported_scheme", `Only the exact scheme is accepted, not ${a.scheme}.`);
      if (a.network !== this.v2Network) throw new Refusal("invalid_network", `Pay on ${this.v2Network}, not ${a.network}.`);
      if (!sameAddress(a.asset, this.config.usdcAddress)) {
        throw new Refusal("invalid_payment_requirements", `Pay in USDC (${this.config.usdcAddress}), not ${a.asset}.`);
      }
      if (a.amount !== this.price.toString()) {
        throw new Refusal("invalid_payment_requirements", `The price is ${this.price} base units, not ${a.amount}.`);
      }
      if (!sameAddress(a.payTo, this.config.payTo)) {
        throw new Refusal("invalid_payment_requirements", `Pay to ${this.config.payTo}, not ${a.payTo}.`);
      }
      payload = p;
      requirements = this.requirementsV2();
    } else if (version === 1 && isPaymentPayloadV1(decoded)) {
      const p = decoded as PaymentPayloadV1;
      if (p.scheme !== "exact") throw new Refusal("unsupported_scheme", `Only the exact scheme is accepted, not ${p.scheme}.`);
      if (p.network !== this.v1Network) throw new Refusal("invalid_network", `Pay on ${this.v1Network}, not ${p.network}.`);
      payload = p;
      requirements = this.requirementsV1(resourceUrl);
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
    return { payload, requirements, auth };
  }

  private async settle(
    payload: AnyPaymentPayload,
    requirements: AnyPaymentRequirements,
    auth: Authorization,
    responseHeader: string,
  ): Promise<SellerAnswer> {
    let settled: SettleResponse;
    try {
      const verified = await this.facilitator.verify(payload, requirements);
      if (!verified.isValid) {
        throw new Refusal(verified.invalidReason ?? "invalid_payment", verified.invalidMessage ?? "The facilitator refused the payment.");
      }
      settled = await this.facilitator.settle(payload, requirements);
    } catch (err) {
      if (err instanceof Refusal) throw err;
      this.logger?.error({ err, payer: auth.from }, "seller: facilitator unreachable");
      throw upstreamError("The payment facilitator could not be reached; nothing was charged. Try again later.");
    }
    if (!settled.success || !settled.transaction) {
      throw new Refusal(settled.errorReason ?? "settlement_failed", settled.errorMessage ?? "The payment did not settle.");
    }
    const payer = getAddress(auth.from.toLowerCase()); // the signer of the authorization the facilitator verified
    const txHash = settled.transaction;
    return {
      status: 200,
      headers: { [responseHeader]: encodePaymentResponseHeader(settled), "Cache-Control": "no-store" },
      body: {
        agent: { address: payer, network: this.config.networkName, chainId: this.config.chainId },
        portfolio: await this.portfolio(payer),
        payment: {
          status: "settled",
          txHash,
          network: this.config.networkName,
          token: "USDC",
          amount: fromBaseUnits(this.price),
          payer,
          explorer: `${this.config.explorerUrl}/tx/${txHash}`,
        },
      },
    };
  }

  /** The payer's holdings after payment; USDC valued at 1 USD, ETH listed unpriced (no price oracle). */
  private async portfolio(payer: string) {
    try {
      const { usdc, eth } = await this.chain.holdings(payer);
      const usdcDecimal = fromBaseUnits(usdc);
      return {
        totalValueUsd: usdcDecimal,
        tokens: [
          { symbol: "USDC", address: this.config.usdcAddress, balance: usdcDecimal, valueUsd: usdcDecimal },
          { symbol: "ETH", balance: formatEther(eth) },
        ],
      };
    } catch (err) {
      // The payment is settled: answer it even when the chain read fails.
      this.logger?.warn({ err, payer }, "seller: portfolio read failed");
      return { totalValueUsd: null, tokens: [], error: "chain_unavailable" };
    }
  }
}
