/**
 * Sandbox honesty: GET / answers API clients (curl) with an index instead of 404, CHAIN_PORT fixes the embedded
 * chain's RPC port, and explorer links point to the service's own decoded view of its chain, not basescan.org (chain
 * id 8453 is real Base's too).
 */
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { randomOwner, startStack, type Stack } from "../helpers/stack";

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe("sandbox: GET / for curl, CHAIN_PORT, and the local explorer", () => {
  let s: Stack;
  let chainPort: number;

  before(async () => {
    chainPort = await freePort();
    s = await startStack({ CHAIN_PORT: String(chainPort) });
  });
  after(() => s?.close());

  it("serves the embedded chain's JSON-RPC on CHAIN_PORT", async () => {
    expect(s.svc.config.rpcUrl).to.equal(`http://127.0.0.1:${chainPort}`);
    const res = await fetch(`http://127.0.0.1:${chainPort}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect((await res.json()).result).to.equal("0x2105");
  });

  it("GET / answers curl (Accept: */*) with an index of links, and browsers with the dashboard", async () => {
    const res = await s.api("GET", "/", { headers: { Accept: "*/*" } });
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.match(/^application\/json/);
    expect(res.body).to.include({
      service: "SpendGate",
      mode: "embedded",
      dashboard: `${s.url}/`,
      skill: `${s.url}/skill.md`,
      mcp: `${s.url}/mcp`,
      openapi: `${s.url}/openapi.json`,
    });
    const page = await fetch(`${s.url}/`, { headers: { Accept: "text/html,*/*;q=0.8" } });
    expect(page.headers.get("content-type")).to.match(/^text\/html/);
  });

  it("points explorer links to /dev/explorer, which decodes the sandbox's transactions and addresses", async () => {
    const config = (await s.api("GET", "/dashboard/config")).body;
    expect(config.explorerUrl).to.equal(`${s.url}/dev/explorer`);

    const owner = randomOwner();
    const { agentAddress, apiKey } = await s.genesis();
    expect((await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress) })).status).to.equal(200);
    const policy = { perTxLimit: "5", dailyBudget: "20", allowlist: ["127.0.0.1"], approvalThreshold: "2" };
    const deployed = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(owner, agentAddress, policy) });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(201);

    const tx = await s.api("GET", `/dev/explorer/tx/${deployed.body.txHash}`);
    expect(tx.status, JSON.stringify(tx.body)).to.equal(200);
    expect(tx.body).to.include({ hash: deployed.body.txHash, status: "success" });
    expect(tx.body.note).to.include("not Base");
    const names = tx.body.events.map((e: { name: string }) => e.name);
    expect(names).to.include.members(["AgentDeployed", "PolicyUpdated"]);
    const updated = tx.body.events.find((e: { name: string }) => e.name === "PolicyUpdated");
    expect(updated.contract).to.equal("SpendPolicy");
    expect(updated.args.agent).to.equal(agentAddress);
    expect(updated.args.policy).to.include({ perTxLimit: "5000000", dailyBudget: "20000000" });

    const faucet = await s.api("POST", "/dev/faucet", { body: { agentAddress, amount: "3" } });
    const minted = (await s.api("GET", `/dev/explorer/tx/${faucet.body.txHash}`)).body;
    const transfer = minted.events.find((e: { name: string }) => e.name === "Transfer");
    expect(transfer).to.deep.include({ contract: "USDC" });
    expect(transfer.args).to.include({ to: agentAddress, value: "3000000" });

    const address = await s.api("GET", `/dev/explorer/address/${agentAddress}`);
    expect(address.body).to.include({ address: agentAddress, contract: true, usdc: "3", eth: "0.0" });

    for (const path of [`/dev/explorer/tx/0x${"ab".repeat(32)}`, "/dev/explorer/tx/nothex", "/dev/explorer/address/0x12"]) {
      const res = await s.api("GET", path);
      expect(res.status, path).to.equal(404);
      expect(res.body).to.include({ error: "not_found", status: 404 });
    }
  });
});
