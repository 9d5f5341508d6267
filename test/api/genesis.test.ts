import { expect } from "chai";
import { ZeroAddress, getAddress } from "ethers";
import { startStack, type Stack } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";

const DASHBOARD = "https://dashboard.spendgate.test";

describe("POST /wallet/genesis (open registration)", () => {
  let s: Stack;
  before(async () => {
    s = await startStack({ DASHBOARD_URL: DASHBOARD });
  });
  after(async () => s?.close());

  it("creates an agent wallet and answers 201 with the interface's fields", async () => {
    const before = Date.now();
    const res = await s.api("POST", "/wallet/genesis", { body: { email: "Ops@Example.com", label: "research-bot" } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const { agentAddress, apiKey, label, createdAt, message } = res.body;
    expect(agentAddress).to.match(/^0x[0-9a-fA-F]{40}$/);
    expect(agentAddress).to.equal(getAddress(agentAddress));
    expect(apiKey).to.match(/^sk_[0-9a-f]{64}$/);
    expect(label).to.equal("research-bot");
    expect(new Date(createdAt).toISOString()).to.equal(createdAt);
    expect(new Date(createdAt).getTime()).to.be.within(before - 1000, Date.now() + 1000);
    expect(message).to.be.a("string").and.include(`${DASHBOARD}/onboarding?agent=${agentAddress}`);
    // The agent address is the factory's CREATE2 wallet of a signing key the service holds (encrypted): known now,
    // deployed with the first owner-signed policy.
    const doc = (await s.svc.store.agents.findOne({ address: agentAddress }))!;
    expect(await s.svc.store.walletKeys.countDocuments({ address: doc.signerAddress })).to.equal(1);
    expect(getAddress(await s.svc.chain.factory.predictAgent(doc.signerAddress, ZeroAddress))).to.equal(agentAddress);
    expect(doc.policyAddress).to.equal(agentAddress);
    expect(await s.svc.chain.isDeployed(agentAddress)).to.equal(false);
    const limits = await s.api("GET", "/limits", { key: apiKey });
    expect(limits.status).to.equal(200);
    expect(limits.body.agents.map((a: { address: string }) => a.address)).to.deep.equal([agentAddress]);
  });

  it("gives every agent its own wallet and key", async () => {
    const a = await s.genesis({ label: "one" });
    const b = await s.genesis({ label: "two" });
    expect(a.agentAddress).to.not.equal(b.agentAddress);
    expect(a.apiKey).to.not.equal(b.apiKey);
  });

  it("answers 409 conflict for the same email and label again, and creates nothing", async () => {
    const body = { email: "twice@example.com", label: "dup-bot" };
    const first = await s.api("POST", "/wallet/genesis", { body });
    expect(first.status).to.equal(201);
    const [agents, wallets, keys] = await Promise.all([
      s.svc.store.agents.countDocuments(),
      s.svc.store.walletKeys.countDocuments(),
      s.svc.store.apiKeys.countDocuments(),
    ]);

    const again = await s.api("POST", "/wallet/genesis", { body: { email: "TWICE@example.com", label: "dup-bot" } });
    expectErrorShape(again, 409, "conflict");
    expect(again.body.message).to.match(/^Agent already registered/);
    expect(again.body.apiKey).to.equal(undefined);
    expect(await s.svc.store.agents.countDocuments()).to.equal(agents);
    expect(await s.svc.store.walletKeys.countDocuments()).to.equal(wallets);
    expect(await s.svc.store.apiKeys.countDocuments()).to.equal(keys);
  });

  it("treats another label with the same email as another agent", async () => {
    await s.genesis({ email: "fleet@example.com", label: "bot-a" });
    const other = await s.api("POST", "/wallet/genesis", { body: { email: "fleet@example.com", label: "bot-b" } });
    expect(other.status).to.equal(201);
  });

  it("creates exactly one agent for 10 concurrent identical requests (one 201, nine 409)", async () => {
    const body = { email: "race@example.com", label: "race-bot" };
    const walletsBefore = await s.svc.store.walletKeys.countDocuments();
    const results = await Promise.all(Array.from({ length: 10 }, () => s.api("POST", "/wallet/genesis", { body })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).to.deep.equal([201, ...Array(9).fill(409)]);
    for (const r of results.filter((x) => x.status === 409)) expectErrorShape(r, 409, "conflict");

    const winner = results.find((r) => r.status === 201)!.body;
    const agents = await s.svc.store.agents.find({ email: "race@example.com", label: "race-bot" }).toArray();
    expect(agents.map((a) => a.address)).to.deep.equal([winner.agentAddress]);
    // The losers' wallets are not left behind, and only the winner got a key.
    expect(await s.svc.store.walletKeys.countDocuments()).to.equal(walletsBefore + 1);
    expect(await s.svc.store.apiKeys.countDocuments({ agentAddress: winner.agentAddress })).to.equal(1);
    const keyed = await s.svc.store.apiKeys.countDocuments({ role: "agent" });
    expect(keyed).to.equal(await s.svc.store.agents.countDocuments());
  });

  it("refuses an agent key: agents cannot create agents (403)", async () => {
    const { apiKey } = await s.genesis({ label: "parent" });
    const res = await s.api("POST", "/wallet/genesis", { key: apiKey, body: { label: "child" } });
    expectErrorShape(res, 403, "forbidden");
  });
});
