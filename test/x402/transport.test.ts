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
});
