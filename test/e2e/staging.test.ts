/**
 * `npm run staging` as the README gives it: a separate chain process (hardhat node), the store over the wire,
 * `npm run deploy -- --network localhost` against that chain, then the service in production mode. From outside, over
 * HTTP only: /health/ready, genesis, the owner's policy, `npm run staging:fund`, a paid request; then SIGTERM stops
 * every process (exit 0, both ports freed).
 */
import { createServer } from "node:net";
import { join } from "node:path";
import { expect } from "chai";
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from "undici";
import { rpc, startChild, type Child } from "../../scripts/staging/processes";
import { randomOwner, remoteStack } from "../helpers/stack";

const ROOT = join(__dirname, "..", "..");

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

describe("npm run staging (NETWORK=base-sepolia): production mode against a local chain process and a store over the wire", function () {
  this.timeout(240_000);
  let staging: Child | undefined;
  let dispatcher: Dispatcher | undefined;
  before(() => {
    // Idle connections dropped well before the service's 5 s keep-alive ends: on a loaded machine a POST sent on a
    // socket the server is closing fails with "other side closed" (fetch retries only idempotent requests).
    dispatcher = getGlobalDispatcher();
    setGlobalDispatcher(new Agent({ keepAliveTimeout: 1_000, keepAliveMaxTimeout: 1_000 }));
  });
  after(async () => {
    if (dispatcher) setGlobalDispatcher(dispatcher);
    await staging?.stop(5_000);
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && staging) console.log(staging.tail().slice(-4000));
  });

  it("deploys, starts, and takes genesis, a policy and a payment through the service; SIGTERM stops everything", async () => {
    const [chainPort, port] = [await freePort(), await freePort()];
    // A sandbox of Base Sepolia: its chain id for the node, TestUSDC at its USDC address, the service on NETWORK.
    const env = { ...process.env, NETWORK: "base-sepolia", CHAIN_PORT: String(chainPort), PORT: String(port), LOG_LEVEL: "warn" };
    const t0 = Date.now();
    staging = startChild("npm run staging", "npm", ["run", "staging"], { cwd: ROOT, env });
    const ready = JSON.parse((await staging.match(/STAGING (\{.*\})\n/, 180_000))[1]) as { url: string; rpcUrl: string; usdc: string };
    const startMs = Date.now() - t0;
    expect(ready.url).to.equal(`http://127.0.0.1:${port}`);
    expect(ready.rpcUrl).to.equal(`http://127.0.0.1:${chainPort}`);
    const out = staging.tail();
    expect(out)
      .to.include("npm run deploy -- --network localhost")
      .and.include("Placed TestUSDC (test code) at 0x036CbD53842c5426634e7929541eC2318f3dCF7e");
    expect(await rpc(ready.rpcUrl, "eth_chainId")).to.equal("0x14a34");
    expect(out).to.include("Uniswap v3: none on this network");

    const health = await fetch(`${ready.url}/health/ready`);
    expect(health.status).to.equal(200);
    expect(await (await fetch(`${ready.url}/health`)).json()).to.include({ mode: "production" });

    const s = remoteStack(ready.url, 84532);
    const agent = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"], perTxLimit: "1", dailyBudget: "5", approvalThreshold: "1" });
    const limits = await s.api("GET", "/limits", { key: agent.apiKey });
    expect(limits.body.agents[0]).to.include({ address: agent.agentAddress, deployed: true, perTxLimit: "1", dailyBudget: "5" });

    const fund = startChild("npm run staging:fund", "npm", ["run", "staging:fund", "--", agent.agentAddress, "2"], { cwd: ROOT, env });
    expect(await fund.exited, fund.tail()).to.equal(0);
    expect(fund.tail()).to.match(/Minted 2 test USDC to 0x[0-9a-fA-F]{40} \(tx 0x[0-9a-f]{64}\); balance 2\.0 USDC/);

    const paid = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: `${ready.url}/sell/agent-intel`, maxAmount: "0.05", intent: "staging check" },
    });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved", amount: "0.01" });
    const ledger = await s.api("GET", "/ledger", { key: agent.apiKey });
    expect(ledger.body.transactions[0]).to.include({ status: "approved", network: "base-sepolia", chainId: 84532 });
    const totalMs = Date.now() - t0;

    staging.process.kill("SIGTERM");
    expect(await staging.exited, staging.tail().slice(-3000)).to.equal(0);
    expect(await portFree(port)).to.equal(true);
    expect(await portFree(chainPort)).to.equal(true);
    console.log(`      staging up in ${startMs} ms; genesis to a settled payment, end to end: ${totalMs} ms`);
  });
});
