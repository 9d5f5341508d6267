import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { requestSeller, SellerError, type BuyerOptions } from "../../src/x402/buyer";

const OPTS: BuyerOptions = {
  timeoutMs: 2_000,
  maxBytes: 65_536,
  allowPrivate: true,
  allowHttp: true,
  chainId: 8453,
  usdcAddress: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
};

describe("seller transport (x402 buyer)", () => {
  let server: Server;
  let base: string;
  let hits = 0;
  before(async () => {
    server = createServer((req, res) => {
      hits++;
      if (req.url === "/broken") return void res.writeHead(302, { Location: "http://[::1" }).end();
      if (req.url === "/hop") return void res.writeHead(302, { Location: "/x" }).end("moved");
      if (req.url === "/streamed") {
        // No Content-Length: the limit is found while reading.
        res.writeHead(200, { "Content-Type": "text/plain" });
        for (let i = 0; i < 20; i++) res.write("x".repeat(8_192));
        return void res.end();
      }
      if (req.url === "/stalls") {
        res.writeHead(200, { "Content-Type": "text/plain" });
        return void res.write("part of it");
      }
      if (req.url === "/402") {
        return void res.writeHead(402, { "PAYMENT-REQUIRED": "abc", "Set-Cookie": ["a=1", "b=2"] }).end('{"error":"pay"}');
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it("refuses a plain-http seller without connecting unless ALLOW_HTTP_SELLERS", async () => {
    const before = hits;
    const err = await requestSeller({ url: `${base}/x`, method: "GET" }, { ...OPTS, allowHttp: false }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(SellerError);
    expect((err as SellerError).code).to.equal("insecure_seller");
    expect(hits).to.equal(before);
    expect((await requestSeller({ url: `${base}/x`, method: "GET" }, OPTS)).status).to.equal(200);
  });

  it("answers a redirect to something that is not a URL as a refused redirect, not an exception", async () => {
    const err = await requestSeller({ url: `${base}/broken`, method: "GET" }, OPTS).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(SellerError);
    expect((err as SellerError).code).to.equal("seller_redirect_refused");
  });

  it("reads status, headers (any case, repeated ones joined) and the JSON body, and follows a same-host redirect", async () => {
    const res = await requestSeller({ url: `${base}/402`, method: "GET" }, OPTS);
    expect(res.status).to.equal(402);
    expect(res.headers.get("Payment-Required")).to.equal("abc");
    expect(res.headers.get("set-cookie")).to.equal("a=1, b=2");
    expect(res.headers.get("x-absent")).to.equal(null);
    expect(res.body).to.deep.equal({ error: "pay" });
    const hopped = await requestSeller({ url: `${base}/hop`, method: "GET" }, OPTS);
    expect(hopped).to.include({ status: 200, url: `${base}/x` });
    expect(hopped.body).to.deep.equal({});
  });

  it("refuses a body past the limit while reading it (no Content-Length), and a body that stalls past the time limit", async () => {
    const big = await requestSeller({ url: `${base}/streamed`, method: "GET" }, OPTS).then(
      () => null,
      (e: unknown) => e,
    );
    expect((big as SellerError).code).to.equal("seller_response_too_large");
    const slow = await requestSeller({ url: `${base}/stalls`, method: "GET" }, { ...OPTS, timeoutMs: 300 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect((slow as SellerError).code).to.equal("seller_timeout");
  });

  it("says why a seller is out of reach (connection refused)", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await requestSeller({ url: `http://127.0.0.1:${port}/x`, method: "GET" }, OPTS).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as SellerError).code).to.equal("seller_unreachable");
    expect((err as SellerError).message).to.include("ECONNREFUSED");
  });
});
