/**
 * What every test seller shares: the TestSeller handle, real HTTP on a 127.0.0.1 random port and small helpers over
 * node:http requests and answers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Facilitator } from "../../src/x402/facilitator";

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
  /** The EIP-712 domain the seller names for the token; defaults to USDC's (a hostile seller names another). */
  extra?: { name: string; version: string };
}

export const USDC_EXTRA = { name: "USD Coin", version: "2" };

/** The handle of a seller listening at `listener`: its URLs and close() from the listener, the rest from the seller. */
export function sellerHandle(
  listener: { url: string; close: () => Promise<void> },
  seller: Omit<TestSeller, "url" | "resource" | "close"> & Partial<Pick<TestSeller, "close">>,
): TestSeller {
  return { url: listener.url, resource: `${listener.url}/resource`, close: listener.close, ...seller };
}

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify(body));
}

/** Listens on 127.0.0.1:0; close() drops every connection, so nothing keeps the process alive. */
export async function listen(handler: Handler): Promise<{ server: Server; url: string; close: () => Promise<void> }> {
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

/** A port free on 127.0.0.1 a moment ago (for a process that must be told its port before it starts). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export async function readBody(req: IncomingMessage): Promise<void> {
  for await (const _chunk of req) {
    // drained: the sellers ignore request bodies
  }
}
