/**
 * Dependencies may die (issue 27): with the store or the chain's JSON-RPC out of reach, payment and read routes answer
 * 503 `unavailable` (retryable, Retry-After) within a bounded time, never a 500; /health/ready names what fails while
 * /health/live still answers; and everything works again by itself once the dependency is back. The store and the
 * chain are real (CongoDB, the embedded Hardhat chain), each behind a TCP pass-through the test cuts and restores.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { VERSION } from "../../src/version";
import { randomOwner, startStack, type ApiResponse, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { startTcpProxy, type TcpProxy } from "../helpers/tcpProxy";

const USDC = 1_000_000n;

async function until<T>(what: () => Promise<T | null | undefined | false>): Promise<T> {
  for (;;) {
    const v = await what();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function expectUnavailable(res: ApiResponse, what: RegExp) {
  expect(res.status, JSON.stringify(res.body)).to.equal(503);
  expect(res.body).to.include({ error: "unavailable", status: 503, retryable: true });
  expect(res.body.message).to.match(what);
  expect(Number(res.headers.get("retry-after"))).to.be.greaterThan(0);
}

describe("dependencies down: 503 unavailable, /health/ready says which, and recovery by itself", function () {
  this.timeout(180_000);
  let chain: EmbeddedChain;
  let mongo: EmbeddedMongo;
  let rpc: TcpProxy;
  let db: TcpProxy;
  let s: Stack;
  let seller: TestSeller;
  let agent: { agentAddress: string; apiKey: string };

  before(async () => {
    chain = await startEmbeddedChain();
    mongo = await startEmbeddedMongo();
    const chainUrl = new URL(chain.rpcUrl);
    rpc = await startTcpProxy(chainUrl.hostname, Number(chainUrl.port));
    const mongoUrl = new URL(mongo.uri);
    db = await startTcpProxy(mongoUrl.hostname, Number(mongoUrl.port));
    s = await startStack(
      {
        MONGODB_URI: `mongodb://${db.host}:${db.port}`,
        MONGODB_DB: `deps_${randomBytes(4).toString("hex")}`,
        WALLET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
        API_KEY_CACHE_MS: "0",
      },
      { embeddedChain: { ...chain, rpcUrl: `http://${rpc.host}:${rpc.port}` } },
    );
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    agent = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, agent.agentAddress, 10n * USDC);
  });
  after(async () => {
    await rpc?.start().catch(() => undefined);
    await db?.start().catch(() => undefined);
    await seller?.close();
    await s?.close();
    await rpc?.stop();
    await db?.stop();
    await mongo?.stop();
    await chain?.close();
  });

  const pay = (key?: string) =>
    s.api("POST", "/pay", {
      key: agent.apiKey,
      headers: key ? { "Idempotency-Key": key } : {},
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "dependencies" },
    });

  it("/health/live and /health answer version and commit; /health/ready is ready with its checks", async () => {
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    const live = await s.api("GET", "/health/live");
    expect(live.status).to.equal(200);
    expect(live.body).to.include({ status: "ok", version: VERSION, commit });
    const health = await s.api("GET", "/health");
    expect(health.status).to.equal(200);
    expect(health.body).to.include({ status: "ok", store: "ok", chain: "ok", version: VERSION, commit });
    const ready = await s.api("GET", "/health/ready");
    expect(ready.status, JSON.stringify(ready.body)).to.equal(200);
    expect(ready.body).to.include({ status: "ready", store: "ok", chain: "ok", indexer: "ok", maxIndexerLag: 1000 });
    expect(ready.body.blockNumber).to.be.a("number");
    expect(ready.body.indexerLag).to.be.at.most(1000);
  });

  it("with the store out of reach: 503 on payments and reads within seconds, ready names the store, live answers; then back", async () => {
    await db.stop();
    try {
      const t0 = Date.now();
      expectUnavailable(await s.api("GET", `/ledger?address=${agent.agentAddress}`, { key: agent.apiKey }), /database/);
      expectUnavailable(await pay("store-down-1"), /database/);
      const ready = await s.api("GET", "/health/ready");
      expectUnavailable(ready, /store/);
      expect(ready.body.details).to.include({ store: "unreachable", chain: "ok" });
      expect((await s.api("GET", "/health/live")).status).to.equal(200);
      expect(Date.now() - t0, "answered within the store's 5 s selection timeout each").to.be.lessThan(20_000);
    } finally {
      await db.start();
    }
    await until(async () => (await s.api("GET", "/health/ready")).status === 200);
    const paid = await pay("store-down-1");
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved" });
  });

  it("with the chain's JSON-RPC out of reach: 503 on payments and reads, ready names the chain; then back", async () => {
    await rpc.stop();
    try {
      expectUnavailable(await s.api("GET", `/wallet/balance?address=${agent.agentAddress}`, { key: agent.apiKey }), /chain/);
      expectUnavailable(await pay("chain-down-1"), /chain/);
      const ready = await s.api("GET", "/health/ready");
      expectUnavailable(ready, /chain/);
      expect(ready.body.details).to.include({ store: "ok", chain: "unreachable" });
      const health = await s.api("GET", "/health");
      expect(health.status).to.equal(503);
      expect(health.body).to.include({ status: "degraded", chain: "unreachable", version: VERSION });
    } finally {
      await rpc.start();
    }
    await until(async () => (await s.api("GET", "/health/ready")).status === 200);
    const paid = await pay("chain-down-1");
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved" });
  });
});
