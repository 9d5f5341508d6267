/** The misbehaving test seller: each MisbehaviourMode is one way a seller gets x402 wrong. */
import type { ServerResponse } from "node:http";
import { Wallet } from "ethers";
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { BASE_USDC } from "../../src/config";
import type { Facilitator } from "../../src/x402/facilitator";
import { USDC_EXTRA, header, listen, sellerHandle, readBody, sendJson, type TestSeller } from "./sellerServer";

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

  return sellerHandle(listener, {
    payTo,
    hits,
    settlements,
    paymentHeaders,
    setPrice: (units) => (price = units),
    close: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await listener.close();
    },
  });
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
