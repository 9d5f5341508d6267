/**
 * Independent x402 sellers for tests: real HTTP on 127.0.0.1 random ports, real x402 libraries, no mocks.
 * - startV2Seller: @x402/core's x402ResourceServer + x402HTTPResourceServer with the exact EVM server scheme,
 *   settling through one of our facilitators (PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE).
 * - startV1Seller: a hand-written v1 seller (JSON 402 body, X-PAYMENT, X-PAYMENT-RESPONSE).
 * - startMisbehavingSeller: the ways a seller goes wrong.
 * Every seller serves the same thing on every path; buyers use `seller.resource` (`<url>/resource`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet } from "ethers";
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import {
  x402HTTPResourceServer,
  x402ResourceServer,
  type FacilitatorClient,
  type HTTPAdapter,
  type HTTPRequestContext,
} from "@x402/core/server";
import type { PaymentPayloadV1, PaymentRequired, PaymentRequirements, PaymentRequirementsV1 } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { BASE_USDC } from "../../src/config";
import { createInProcessFacilitator, type Facilitator, type InProcessFacilitator } from "../../src/x402/facilitator";
import type { Stack } from "./stack";

export interface TestSeller {
  /** Base URL, e.g. http://127.0.0.1:1234 (every path answers the same). */
  url: string;
  /** `${url}/resource`, the path buyers are expected to call. */
  resource: string;
  payTo: string;
  /** unpaid: requests without a payment header; paid: requests carrying one (whatever came of it). */
  hits: { paid: number; unpaid: number };
  /** Transaction hashes this seller settled. */
  settlements: string[];
  /** The payment headers this seller received (PAYMENT-SIGNATURE or X-PAYMENT), as sent: a hostile seller keeps them. */
  paymentHeaders?: string[];
  setPrice(units: bigint): void;
  close(): Promise<void>;
}

export interface SellerOptions {
  facilitator: Facilitator;
  /** Token address (the USDC the chain serves). */
  usdc: string;
  /** Price in token base units (6 decimals). */
  price: bigint;
  /** Defaults to a random address. */
  payTo?: string;
  /** Defaults to 8453. */
  chainId?: number;
}

export type MisbehaviourMode =
  | "garbage402"
  | "otherNetwork"
  | "otherToken"
  | "hugeBody"
  | "redirectPrivate"
  | "slow"
  | "failAfterPayment"
  | "free200"
  | "http500"
  // Settle the payment with opts.facilitator, then answer badly:
  | "settleThenBrokenRedirect"
  | "settleThenDeepBody"
  | "settleThenDollarKeys";

export interface MisbehavingOptions {
  usdc?: string;
  price?: bigint;
  payTo?: string;
  chainId?: number;
  /** hugeBody: bytes streamed after the 402 status line. Default 8 MiB. */
  bodyBytes?: number;
  /** slow: answer 200 after this many ms instead of never. */
  delayMs?: number;
  /** redirectPrivate: where to redirect. Default http://169.254.169.254/latest. */
  location?: string;
  /** settleThen*: the facilitator that settles the payment before the bad answer. */
  facilitator?: Facilitator;
}

const USDC_EXTRA = { name: "USD Coin", version: "2" };
const V1_NETWORKS: Record<number, string> = { 8453: "base", 84532: "base-sepolia" };

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify(body));
}

/** Listens on 127.0.0.1:0; close() drops every connection, so nothing keeps the process alive. */
async function listen(handler: Handler): Promise<{ server: Server; url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "127.0.0.1"}`);
    Promise.resolve(handler(req, res, url)).catch((err: unknown) => {
      sendJson(res, 500, { error: "test_seller_error", message: String((err as { message?: unknown } | null)?.message ?? err) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

async function readBody(req: IncomingMessage): Promise<void> {
  for await (const _chunk of req) {
    // drained: the sellers ignore request bodies
  }
}

/** The x402 FacilitatorClient the resource server wants, around our Facilitator. */
function facilitatorClient(f: Facilitator): FacilitatorClient {
  return {
    verify: (payload, requirements) => f.verify(payload, requirements),
    settle: (payload, requirements) => f.settle(payload, requirements),
    getSupported: () => f.supported(),
  };
}

function nodeAdapter(req: IncomingMessage, url: URL): HTTPAdapter {
  return {
    getHeader: (name) => header(req, name),
    getMethod: () => req.method ?? "GET",
    getPath: () => url.pathname,
    getUrl: () => url.toString(),
    getAcceptHeader: () => header(req, "accept") ?? "",
    getUserAgent: () => header(req, "user-agent") ?? "",
  };
}

/** A v2 seller built on @x402/core's resource server: 402 + PAYMENT-REQUIRED, then verify, serve, settle. */
export async function startV2Seller(opts: SellerOptions): Promise<TestSeller> {
  const network = `eip155:${opts.chainId ?? 8453}` as const;
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  let price = opts.price;
  const hits = { paid: 0, unpaid: 0 };
  const settlements: string[] = [];

  const resourceServer = new x402ResourceServer(facilitatorClient(opts.facilitator));
  resourceServer.register(network, new ExactEvmScheme());
  const route = {
    accepts: {
      scheme: "exact",
      network,
      payTo,
      price: () => ({ amount: price.toString(), asset: opts.usdc, extra: USDC_EXTRA }),
      maxTimeoutSeconds: 300,
    },
    description: "test v2 resource",
    mimeType: "application/json",
  };
  const httpServer = new x402HTTPResourceServer(resourceServer, { "GET /*": route, "POST /*": route });
  await httpServer.initialize();

  const listener = await listen(async (req, res, url) => {
    await readBody(req);
    const context: HTTPRequestContext = { adapter: nodeAdapter(req, url), path: url.pathname, method: req.method ?? "GET" };
    if (header(req, "payment-signature")) hits.paid++;
    else hits.unpaid++;
    const result = await httpServer.processHTTPRequest(context);
    if (result.type === "no-payment-required") {
      sendJson(res, 405, { error: "method_not_allowed" });
      return;
    }
    if (result.type === "payment-error") {
      const { status, headers, body } = result.response;
      sendJson(res, status, body ?? {}, headers);
      return;
    }
    const settled = await httpServer.processSettlement(
      result.paymentPayload,
      result.paymentRequirements,
      result.declaredExtensions,
      { request: context },
      undefined,
      result.beforeHandlerSettlement,
    );
    if (!settled.success) {
      sendJson(res, settled.response.status, settled.response.body ?? { error: settled.errorReason }, {
        ...settled.response.headers,
        ...settled.headers,
      });
      return;
    }
    settlements.push(settled.transaction);
    sendJson(res, 200, { data: "paid content", payer: settled.payer }, settled.headers);
  });

  return {
    url: listener.url,
    resource: `${listener.url}/resource`,
    payTo,
    hits,
    settlements,
    setPrice: (units) => {
      price = units;
    },
    close: listener.close,
  };
}

function v1Requirements(url: string, o: { network: string; price: bigint; payTo: string; usdc: string }): PaymentRequirementsV1 {
  return {
    scheme: "exact",
    network: o.network as PaymentRequirementsV1["network"],
    maxAmountRequired: o.price.toString(),
    resource: url,
    description: "test v1 resource",
    mimeType: "application/json",
    payTo: o.payTo,
    maxTimeoutSeconds: 300,
    asset: o.usdc,
    extra: USDC_EXTRA,
  } as Omit<PaymentRequirementsV1, "outputSchema"> as PaymentRequirementsV1; // outputSchema is optional on the wire
}

/** A hand-written v1 seller: JSON 402 body, X-PAYMENT decoded and verified + settled through the facilitator. */
export async function startV1Seller(opts: SellerOptions): Promise<TestSeller> {
  const chainId = opts.chainId ?? 8453;
  const network = V1_NETWORKS[chainId] ?? `eip155:${chainId}`;
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  let price = opts.price;
  const hits = { paid: 0, unpaid: 0 };
  const settlements: string[] = [];

  const listener = await listen(async (req, res, url) => {
    await readBody(req);
    const requirements = v1Requirements(`${url.origin}${url.pathname}`, { network, price, payTo, usdc: opts.usdc });
    const challenge = (error: string) => sendJson(res, 402, { x402Version: 1, error, accepts: [requirements] });
    const xPayment = header(req, "x-payment");
    if (!xPayment) {
      hits.unpaid++;
      challenge("X-PAYMENT header is required");
      return;
    }
    hits.paid++;
    let payload: PaymentPayloadV1;
    try {
      payload = decodePaymentSignatureHeader(xPayment) as unknown as PaymentPayloadV1;
    } catch {
      challenge("invalid_payment: X-PAYMENT is not base64 JSON");
      return;
    }
    if (payload?.x402Version !== 1 || payload.scheme !== "exact" || payload.network !== network) {
      challenge("invalid_payment: no matching payment requirements");
      return;
    }
    const verified = await opts.facilitator.verify(payload, requirements);
    if (!verified.isValid) {
      challenge(verified.invalidReason ?? "invalid_payment");
      return;
    }
    const settled = await opts.facilitator.settle(payload, requirements);
    if (!settled.success) {
      challenge(settled.errorReason ?? "settlement_failed");
      return;
    }
    settlements.push(settled.transaction);
    sendJson(res, 200, { data: "paid content", payer: settled.payer }, { "X-PAYMENT-RESPONSE": encodePaymentResponseHeader(settled) });
  });

  return {
    url: listener.url,
    resource: `${listener.url}/resource`,
    payTo,
    hits,
    settlements,
    setPrice: (units) => {
      price = units;
    },
    close: listener.close,
  };
}

function v2Challenge(url: string, requirements: PaymentRequirements): Record<string, string> {
  const paymentRequired: PaymentRequired = {
    x402Version: 2,
    error: "Payment required",
    resource: { url, description: "misbehaving resource", mimeType: "application/json" },
    accepts: [requirements],
  };
  return { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(paymentRequired) };
}

/** A seller that gets x402 wrong in one way (see MisbehaviourMode); it never settles anything. */
export async function startMisbehavingSeller(mode: MisbehaviourMode, opts: MisbehavingOptions = {}): Promise<TestSeller> {
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  let price = opts.price ?? 10_000n;
  const hits = { paid: 0, unpaid: 0 };
  const timers = new Set<NodeJS.Timeout>();
  const paymentHeaders: string[] = [];
  const settlements: string[] = [];

  const requirements = (over: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
    scheme: "exact",
    network: `eip155:${opts.chainId ?? 8453}`,
    asset: opts.usdc ?? BASE_USDC,
    amount: price.toString(),
    payTo,
    maxTimeoutSeconds: 300,
    extra: USDC_EXTRA,
    ...over,
  });

  const listener = await listen(async (req, res, url) => {
    const paymentHeader = header(req, "payment-signature") || header(req, "x-payment");
    const paid = Boolean(paymentHeader);
    if (paymentHeader) paymentHeaders.push(paymentHeader);
    if (paid) hits.paid++;
    else hits.unpaid++;
    if (mode !== "slow") await readBody(req);
    const here = `${url.origin}${url.pathname}`;
    if (mode.startsWith("settleThen") && paymentHeader) {
      const payload = decodePaymentSignatureHeader(paymentHeader);
      const settled = await opts.facilitator!.settle(payload, requirements());
      if (settled.success && settled.transaction) settlements.push(settled.transaction);
      if (mode === "settleThenBrokenRedirect") {
        res.writeHead(302, { Location: "http://[::1" }).end();
        return;
      }
      if (mode === "settleThenDeepBody") {
        res.writeHead(200, { "Content-Type": "application/json" }).end("[".repeat(50_000) + "]".repeat(50_000));
        return;
      }
      sendJson(res, 200, { $where: "1", "a.b": { $gt: 1 }, ok: true });
      return;
    }
    if (mode.startsWith("settleThen")) {
      sendJson(res, 402, {}, v2Challenge(here, requirements()));
      return;
    }
    switch (mode) {
      case "garbage402":
        res.writeHead(402, { "Content-Type": "text/plain", "PAYMENT-REQUIRED": "%%%not-x402%%%" }).end("Pay me somehow, maybe.");
        return;
      case "otherNetwork": {
        // Ethereum mainnet with mainnet USDC.
        sendJson(
          res,
          402,
          {},
          v2Challenge(here, requirements({ network: "eip155:1", asset: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48" })),
        );
        return;
      }
      case "otherToken": {
        sendJson(res, 402, {}, v2Challenge(here, requirements({ asset: Wallet.createRandom().address })));
        return;
      }
      case "failAfterPayment":
        if (paid) {
          sendJson(res, 500, { error: "internal", message: "the seller broke after taking the payment header" });
          return;
        }
        {
          sendJson(res, 402, {}, v2Challenge(here, requirements()));
          return;
        }
      case "free200": {
        sendJson(res, 200, { data: "free content" });
        return;
      }
      case "http500": {
        sendJson(res, 500, { error: "internal", message: "seller is down" });
        return;
      }
      case "redirectPrivate":
        res.writeHead(302, { Location: opts.location ?? "http://169.254.169.254/latest" }).end();
        return;
      case "slow": {
        if (opts.delayMs === undefined) return; // never answers; close() drops the connection
        const t = setTimeout(() => {
          timers.delete(t);
          sendJson(res, 200, { data: "late content" });
        }, opts.delayMs);
        t.unref();
        timers.add(t);
        return;
      }
      case "hugeBody":
        return streamHuge(res, opts.bodyBytes ?? 8 * 1024 * 1024, v2Challenge(here, requirements()));
    }
  });

  return {
    url: listener.url,
    resource: `${listener.url}/resource`,
    payTo,
    hits,
    settlements,
    paymentHeaders,
    setPrice: (units) => {
      price = units;
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await listener.close();
    },
  };
}

/** 402 with a valid challenge header, then `bytes` of body, chunked (no Content-Length), respecting backpressure. */
async function streamHuge(res: ServerResponse, bytes: number, headers: Record<string, string>): Promise<void> {
  res.writeHead(402, { "Content-Type": "application/json", ...headers });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  res.write('{"x402Version":1,"accepts":[],"padding":"');
  let sent = 0;
  while (sent < bytes && !res.destroyed) {
    sent += chunk.length;
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  if (!res.destroyed) res.end('"}');
}

/**
 * An in-process facilitator for a test seller with its own fresh key, funded with ETH on the embedded chain. Never
 * share the service's facilitator key: two senders on one key race for the account nonce.
 */
export async function fundedFacilitator(stack: Pick<Stack, "svc">): Promise<InProcessFacilitator> {
  const wallet = Wallet.createRandom();
  await stack.svc.chain.provider.send("hardhat_setBalance", [wallet.address, `0x${(10n ** 21n).toString(16)}`]);
  return createInProcessFacilitator({
    rpcUrl: stack.svc.config.rpcUrl,
    chainId: stack.svc.config.chainId,
    privateKey: wallet.privateKey,
  });
}

/** Mints TestUSDC (open mint) through the service's nonce-serialised operator sender. */
export async function mintUsdc(stack: Pick<Stack, "svc">, to: string, units: bigint): Promise<void> {
  const { chain } = stack.svc;
  await chain.sendAndWait((o) => chain.usdc.connect(chain.operator).getFunction("mint")(to, units, o));
}

/** USDC balance in base units. */
export async function usdcBalance(stack: Pick<Stack, "svc">, address: string): Promise<bigint> {
  return (await stack.svc.chain.usdc.balanceOf(address)) as bigint;
}
