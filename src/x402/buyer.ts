/**
 * The buyer side of x402, used by POST /pay: ask the seller (bounded in time and size), read its 402 in either
 * protocol version, pick the exact-USDC-on-Base requirement, sign with the agent's key through the real x402
 * client, and send the paid request.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentPayload, PaymentRequired, SettleResponse } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { chainIdOfX402Network } from "../chain/networks";
import { getAddress } from "../chain/rpc/checksum";
import { walletSignature } from "../chain/typedData";
import { boundedJson } from "../util/bounded";
import type { Config } from "../config";
import type { AgentSigner } from "../wallets/provider";
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { Agent, request as undiciRequest } from "undici";
import { type Quote, pickQuote } from "./pick";
import { privateAddressesOf, publicOnlyLookup } from "./ssrf";

export { type Quote, pickQuote } from "./pick";

/** Connections to sellers resolve names through a lookup that refuses private addresses (no DNS rebinding). */
const PUBLIC_ONLY = new Agent({ connect: { lookup: publicOnlyLookup } });
const ANY_ADDRESS = new Agent();

/** The connection pool for outgoing requests under the seller rules (webhook deliveries use it too). */
export const sellerDispatcher = (allowPrivate: boolean): Agent => (allowPrivate ? ANY_ADDRESS : PUBLIC_ONLY);

export interface SellerRequest {
  url: string;
  method: "GET" | "POST";
  body?: unknown;
}

/** What is read of response headers (the fetch Headers of any implementation). */
export interface HeaderReader {
  get(name: string): string | null;
}

export interface SellerResponse {
  status: number;
  headers: HeaderReader;
  body: unknown;
  /** The URL that answered (after same-host redirects). */
  url: string;
}

/** A seller problem the caller should see as a clear error (never a 500). */
export class SellerError extends Error {
  constructor(
    readonly code:
      | "seller_unreachable"
      | "seller_timeout"
      | "seller_response_too_large"
      | "seller_redirect_refused"
      | "unsafe_seller_address"
      | "invalid_payment_required"
      | "insecure_seller",
    message: string,
  ) {
    super(message);
  }
}

export interface BuyerOptions {
  timeoutMs: number;
  maxBytes: number;
  allowPrivate: boolean;
  /** Plain-http sellers (the payment header would cross the network in clear). */
  allowHttp: boolean;
  chainId: number;
  usdcAddress: string;
}

/** The buyer's options from the service's configuration (one place for every caller). */
export function sellerOptions(
  c: Pick<Config, "sellerTimeoutMs" | "sellerMaxBytes" | "allowPrivateSellers" | "allowHttpSellers" | "chainId" | "usdcAddress">,
): BuyerOptions {
  return {
    timeoutMs: c.sellerTimeoutMs,
    maxBytes: c.sellerMaxBytes,
    allowPrivate: c.allowPrivateSellers,
    allowHttp: c.allowHttpSellers,
    chainId: c.chainId,
    usdcAddress: c.usdcAddress,
  };
}

const MAX_REDIRECTS = 3;

/** Reads 402s and settlement headers: parsing only (no scheme, no signer), so one serves every request. */
const READER = new x402HTTPClient(new x402Client());

/** Response headers as undici's request hands them (lower-case names), read as fetch's Headers reads them. */
function headerReader(raw: IncomingHttpHeaders): HeaderReader {
  return {
    get: (name) => {
      const v = raw[name.toLowerCase()];
      return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
    },
  };
}

/** Drops a response body unread (its connection is closed); destroying it unread is no error of anyone's. */
function discard(body: Readable): void {
  body.on("error", () => undefined).destroy();
}

async function readLimited(headers: HeaderReader, body: Readable, maxBytes: number): Promise<string> {
  const declared = Number(headers.get("content-length") ?? 0);
  if (declared > maxBytes) {
    discard(body);
    throw new SellerError("seller_response_too_large", `The seller's response is larger than ${maxBytes} bytes.`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      discard(body);
      throw new SellerError("seller_response_too_large", `The seller's response is larger than ${maxBytes} bytes.`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The seller's body as JSON when it is JSON, else as text. JSON deeper than 32 levels or with keys the store cannot
 * keep stays text: it is answered and stored as the seller sent it, never as an object nothing can serialise.
 */
function parseBody(text: string, contentType: string | null): unknown {
  if (!text) return null;
  if (contentType?.includes("json") || /^\s*[[{]/.test(text)) {
    try {
      return boundedJson(JSON.parse(text), { raw: text });
    } catch {
      return text;
    }
  }
  return text;
}

/** Requests the seller. Redirects are followed only on the same host (another host would bypass the allowlist). */
export async function requestSeller(req: SellerRequest, opts: BuyerOptions, headers: Record<string, string> = {}): Promise<SellerResponse> {
  let url = new URL(req.url);
  const originalHost = url.host;
  if (url.protocol === "http:" && !opts.allowHttp) {
    throw new SellerError(
      "insecure_seller",
      `The seller ${url.origin} is plain http; only https sellers are paid here (ALLOW_HTTP_SELLERS).`,
    );
  }
  const body = req.method === "POST" && req.body !== undefined && req.body !== null ? JSON.stringify(req.body) : undefined;
  for (let hop = 0; ; hop++) {
    if (!opts.allowPrivate) {
      const privateIps = await privateAddressesOf(url.hostname).catch(() => {
        throw new SellerError("seller_unreachable", `Could not resolve the seller's host ${url.hostname}.`);
      });
      if (privateIps.length) {
        throw new SellerError("unsafe_seller_address", `The seller's host ${url.hostname} resolves to a private address; refused.`);
      }
    }
    // undici's request, not its fetch: the same pool and connect rules at a fraction of the CPU (no WHATWG Request,
    // Headers and streams around each request). The time limit covers the answer and its body, as fetch's signal did;
    // its timer is cleared once they are read (AbortSignal.timeout's would still fire, and build its error, later).
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new DOMException(`The seller did not answer within ${opts.timeoutMs} ms.`, "TimeoutError")),
      opts.timeoutMs,
    );
    try {
      let res: Awaited<ReturnType<typeof undiciRequest>>;
      try {
        res = await undiciRequest(url, {
          dispatcher: opts.allowPrivate ? ANY_ADDRESS : PUBLIC_ONLY,
          method: req.method,
          headers: { accept: "application/json", ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
          body,
          signal: abort.signal,
        });
      } catch (err) {
        const e = err as { name?: string; code?: string; cause?: { code?: string } };
        if (e.name === "TimeoutError" || e.name === "AbortError") {
          throw new SellerError("seller_timeout", `The seller did not answer within ${opts.timeoutMs} ms.`);
        }
        if ((e.code ?? e.cause?.code) === "EPRIVATEADDRESS") {
          throw new SellerError("unsafe_seller_address", `The seller's host ${url.hostname} resolves to a private address; refused.`);
        }
        throw new SellerError("seller_unreachable", `Could not reach the seller at ${url.origin} (${describeCause(err)}).`);
      }
      const resHeaders = headerReader(res.headers);
      const location = resHeaders.get("location");
      if (res.statusCode >= 300 && res.statusCode < 400 && location) {
        discard(res.body);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new SellerError("seller_redirect_refused", "The seller redirected to an address that is not a URL.");
        }
        // Never from https down to http: the payment header would then travel in clear.
        const downgrade = url.protocol === "https:" && next.protocol !== "https:";
        if (next.host !== originalHost || !/^https?:$/.test(next.protocol) || downgrade || hop >= MAX_REDIRECTS) {
          throw new SellerError(
            "seller_redirect_refused",
            `The seller redirected to ${next.protocol}//${next.host}; only up to ${MAX_REDIRECTS} redirects on the same host are followed.`,
          );
        }
        url = next;
        continue;
      }
      let text: string;
      try {
        text = await readLimited(resHeaders, res.body, opts.maxBytes);
      } catch (err) {
        if (err instanceof SellerError) throw err;
        const e = err as { name?: string };
        if (e.name === "TimeoutError" || e.name === "AbortError") {
          throw new SellerError("seller_timeout", `The seller did not finish answering within ${opts.timeoutMs} ms.`);
        }
        throw new SellerError("seller_unreachable", "The seller's response broke off.");
      }
      return { status: res.statusCode, headers: resHeaders, body: parseBody(text, resHeaders.get("content-type")), url: url.toString() };
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Reads a 402 (v2 PAYMENT-REQUIRED header or v1 JSON body) and picks exact / this chain / USDC / EIP-3009; null if
 * none fits.
 */
export function readQuote(res: SellerResponse, opts: Pick<BuyerOptions, "chainId" | "usdcAddress"> & { payer?: string }): Quote | null {
  return pickQuote(readPaymentRequired(res), opts);
}

/** The x402 payment requirement of a 402 (v2 PAYMENT-REQUIRED header or v1 JSON body), every accepted payment in it. */
export function readPaymentRequired(res: SellerResponse): PaymentRequired {
  let paymentRequired: PaymentRequired;
  try {
    paymentRequired = READER.getPaymentRequiredResponse((n) => res.headers.get(n), res.body);
  } catch {
    throw new SellerError("invalid_payment_required", "The seller's 402 carries no readable x402 payment requirement.");
  }
  if (!paymentRequired || !Array.isArray(paymentRequired.accepts)) {
    throw new SellerError("invalid_payment_required", "The seller's 402 has no list of accepted payments.");
  }
  return paymentRequired;
}

export interface SignedPayment {
  payload: PaymentPayload;
  headers: Record<string, string>;
  /** The EIP-3009 nonce: SpendGate's paymentId. */
  nonce: string;
  /** Exactly the transfer signed: what the policy must authorise before the signature is worth anything. */
  transfer: { payTo: string; amount: bigint; validAfter: bigint; validBefore: bigint };
}

/**
 * The x402 signer of an agent: its address is the agent wallet (the contract that holds the funds, and the
 * EIP-3009 `from`), and its signature is the wallet's ERC-1271 format: the nonce (paymentId) followed by the agent
 * signing key's signature of the EIP-712 digest. The wallet accepts it only for a transfer its policy authorised.
 */
export function walletPayer(walletAddress: string, key: AgentSigner): AgentSigner {
  return {
    address: getAddress(walletAddress) as `0x${string}`,
    signTypedData: async (data) => {
      const nonce = data.message.nonce;
      if (data.primaryType !== "TransferWithAuthorization" || typeof nonce !== "string") {
        throw new Error(`an agent wallet signs only EIP-3009 TransferWithAuthorization, not ${data.primaryType}`);
      }
      return walletSignature(nonce, await key.signTypedData(data)) as `0x${string}`;
    },
  };
}

/**
 * Signs the EIP-3009 authorisation for exactly this requirement through the x402 client, valid for at most
 * `maxValiditySeconds` whatever the seller asks (the payload still names the seller's own requirement, which sellers
 * match exactly).
 */
export async function signPayment(signer: AgentSigner, quote: Quote, maxValiditySeconds = 600): Promise<SignedPayment> {
  const client = new x402Client();
  // The scheme for the quote's own network only (pickQuote chose it), not one v1 scheme per EVM network x402 knows.
  const network = quote.version === 1 ? chainIdOfX402Network(quote.requirement.network) : undefined;
  const networks = quote.version === 1 ? (network ? [`eip155:${network}`] : undefined) : [quote.requirement.network];
  registerExactEvmScheme(client, { signer, networks: networks as `${string}:${string}`[] | undefined });
  client.setSpendControls(false); // the on-chain policy is the spend control
  const http = new x402HTTPClient(client);
  // The seller's JSON is typed, not checked: a string or a missing value must not widen the window.
  const raw: unknown = quote.requirement.maxTimeoutSeconds;
  const asked = Number(raw);
  const validity = Number.isSafeInteger(asked) && asked > 0 ? Math.min(asked, maxValiditySeconds) : maxValiditySeconds;
  const capped = { ...quote.requirement, maxTimeoutSeconds: validity };
  const payload = await http.createPaymentPayload({ ...quote.paymentRequired, accepts: [capped] });
  if (payload.x402Version === 2) (payload as { accepted?: unknown }).accepted = quote.requirement;
  const auth = (payload.payload as { authorization?: Record<string, string> }).authorization;
  if (!auth?.nonce || !auth.to || !auth.value || auth.validBefore === undefined) {
    throw new Error("x402 client produced a payload without an EIP-3009 authorization");
  }
  const transfer = {
    payTo: getAddress(auth.to),
    amount: BigInt(auth.value),
    validAfter: BigInt(auth.validAfter ?? 0),
    validBefore: BigInt(auth.validBefore),
  };
  if (transfer.amount !== quote.amount) throw new Error("x402 client signed another amount than quoted");
  return { payload, headers: http.encodePaymentSignatureHeader(payload), nonce: auth.nonce, transfer };
}

/** The settlement the seller reports in PAYMENT-RESPONSE / X-PAYMENT-RESPONSE, if any. */
export function readSettlement(res: SellerResponse): SettleResponse | null {
  try {
    return READER.getPaymentSettleResponse((n) => res.headers.get(n));
  } catch {
    return null;
  }
}

function describeCause(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.code ?? e.message ?? "network error";
}
