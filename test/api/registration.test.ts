import { expect } from "chai";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { ownerKey, siweVerify } from "../helpers/owner";
import { documentCounts, expectErrorShape } from "../helpers/store";

const REGISTRATION_TOKEN = "reg_0123456789abcdef0123456789abcdef";
const ALLOWED = randomOwner();

describe("POST /wallet/genesis (closed registration)", () => {
  let s: Stack;
  before(async () => {
    s = await startStack({ GENESIS_OPEN: "false", REGISTRATION_TOKEN, OWNER_ALLOWLIST: ALLOWED.address });
  });

  it("closes SIWE sign-in to new owners too: 403 and nothing created, unless allowlisted or with the registration token", async () => {
    const stranger = randomOwner();
    const before = await documentCounts(s.svc.store.db);
    const res = await siweVerify(s, stranger);
    expectErrorShape(res, 403, "forbidden");
    const after = await documentCounts(s.svc.store.db);
    expect({ ...after, siweNonces: before.siweNonces }).to.deep.equal(before); // only the nonce it asked for
    expect(await ownerKey(s, ALLOWED)).to.match(/^sk_/);
    expect(await ownerKey(s, stranger, REGISTRATION_TOKEN)).to.match(/^sk_/);
    // Known from now on: signs in again without the token.
    expect(await ownerKey(s, stranger)).to.match(/^sk_/);
  });
  after(async () => s?.close());

  it("refuses genesis without a key (401) and creates nothing", async () => {
    const before = await documentCounts(s.svc.store.db);
    const res = await s.api("POST", "/wallet/genesis", { body: { email: "anon@example.com", label: "anon" } });
    expectErrorShape(res, 401, "unauthorized");
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(before);
  });

  it("refuses a wrong registration token (401)", async () => {
    const res = await s.api("POST", "/wallet/genesis", { key: REGISTRATION_TOKEN + "x", body: { label: "nope" } });
    expectErrorShape(res, 401, "unauthorized");
  });

  it("creates an unlinked agent with the operator's registration token (201)", async () => {
    const res = await s.api("POST", "/wallet/genesis", { key: REGISTRATION_TOKEN, body: { label: "registered" } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body.apiKey).to.match(/^sk_[0-9a-f]{64}$/);
    const agent = await s.svc.store.agents.findOne({ address: res.body.agentAddress });
    expect(agent?.ownerAddress).to.equal(null);
  });

  it("does not let the registration token act as an agent or owner key", async () => {
    const limits = await s.api("GET", "/limits", { key: REGISTRATION_TOKEN });
    expectErrorShape(limits, 403, "forbidden");
    const agents = await s.api("GET", "/wallet/agents", { key: REGISTRATION_TOKEN });
    expectErrorShape(agents, 403, "forbidden");
  });

  it("creates the agent already linked to the owner when called with an owner key (201)", async () => {
    const owner = randomOwner();
    const key = await ownerKey(s, owner, REGISTRATION_TOKEN);
    const res = await s.api("POST", "/wallet/genesis", { key, body: { email: "owner@example.com", label: "owned" } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const { agentAddress, apiKey } = res.body;
    expect(apiKey).to.match(/^sk_[0-9a-f]{64}$/);
    expect((await s.svc.store.agents.findOne({ address: agentAddress }))?.ownerAddress).to.equal(owner.address);

    // Linked already: the owner sees it, and linking it again is a conflict.
    const list = await s.api("GET", "/wallet/agents", { key });
    expect(list.body.agents.map((a: { address: string }) => a.address)).to.deep.equal([agentAddress]);
    const relink = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress) });
    expectErrorShape(relink, 409, "conflict");
    // The owner can set its policy straight away.
    const policy = { perTxLimit: "1", dailyBudget: "3", allowlist: ["api.example.com"], approvalThreshold: "1" };
    const limits = await s.api("POST", "/limits", { key, body: await s.policyBody(owner, agentAddress, policy) });
    expect(limits.status, JSON.stringify(limits.body)).to.equal(201);
  });

  it("answers 409 for the same owner, email and label again", async () => {
    const owner = randomOwner();
    const key = await ownerKey(s, owner, REGISTRATION_TOKEN);
    const body = { email: "again@example.com", label: "twice" };
    expect((await s.api("POST", "/wallet/genesis", { key, body })).status).to.equal(201);
    const again = await s.api("POST", "/wallet/genesis", { key, body });
    expectErrorShape(again, 409, "conflict");
    expect(again.body.message).to.match(/^Agent already registered/);
  });

  it("refuses an agent key (403): agents cannot create agents", async () => {
    const res = await s.api("POST", "/wallet/genesis", { key: REGISTRATION_TOKEN, body: { label: "agent-parent" } });
    const child = await s.api("POST", "/wallet/genesis", { key: res.body.apiKey, body: { label: "agent-child" } });
    expectErrorShape(child, 403, "forbidden");
  });
});
