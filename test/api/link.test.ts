import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { documentCounts, expectErrorShape } from "../helpers/store";

describe("POST /agents/link (owner's EIP-712 LinkAgent signature)", () => {
  const { s } = stackPerFile();

  const ownerOf = async (agent: string) => (await s.svc.store.agents.findOne({ address: agent }))?.ownerAddress;

  it("links an agent to the owner who signed: 200 { agentAddress, ownerAddress }", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const res = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress) });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.deep.equal({ agentAddress, ownerAddress: owner.address });
    expect(await ownerOf(agentAddress)).to.equal(owner.address);
  });

  it("accepts lower-case addresses and answers them checksummed", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const body = await s.signLink(owner, agentAddress);
    const res = await s.api("POST", "/agents/link", {
      body: { ...body, agentAddress: agentAddress.toLowerCase(), ownerAddress: owner.address.toLowerCase() },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.deep.equal({ agentAddress, ownerAddress: owner.address });
  });

  it("refuses a signature by someone other than the named owner (401) and links nothing", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const forged = await s.signLink(randomOwner(), agentAddress);
    const before = await documentCounts(s.svc.store.db);
    const res = await s.api("POST", "/agents/link", { body: { ...forged, ownerAddress: owner.address } });
    expectErrorShape(res, 401);
    expect(await ownerOf(agentAddress)).to.equal(null);
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(before);
  });

  it("refuses the owner's signature for another agent (401)", async () => {
    const owner = randomOwner();
    const [a, b] = [await s.genesis(), await s.genesis()];
    const signedForA = await s.signLink(owner, a.agentAddress);
    const codeOfB = (await s.signLink(owner, b.agentAddress)).activationCode;
    const res = await s.api("POST", "/agents/link", { body: { ...signedForA, agentAddress: b.agentAddress, activationCode: codeOfB } });
    expectErrorShape(res, 401);
    expect(await ownerOf(b.agentAddress)).to.equal(null);
  });

  it("refuses a signature whose timestamp differs from the signed one (401)", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const body = await s.signLink(owner, agentAddress);
    const res = await s.api("POST", "/agents/link", { body: { ...body, timestamp: (body.timestamp as number) + 1 } });
    expectErrorShape(res, 401);
  });

  it("refuses an expired timestamp (now - 1000 s) even when correctly signed (401)", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const res = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress, s.now() - 1000) });
    expectErrorShape(res, 401);
    expect(await ownerOf(agentAddress)).to.equal(null);
  });

  it("refuses a far-future timestamp even when correctly signed (401)", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const res = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress, s.now() + 86_400) });
    expectErrorShape(res, 401);
    expect(await ownerOf(agentAddress)).to.equal(null);
  });

  it("refuses the same signed message a second time, and keeps the first owner", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const body = await s.signLink(owner, agentAddress);
    expect((await s.api("POST", "/agents/link", { body })).status).to.equal(200);
    const replay = await s.api("POST", "/agents/link", { body });
    expectErrorShape(replay);
    expect(replay.status).to.be.oneOf([401, 409]);
    expect(await ownerOf(agentAddress)).to.equal(owner.address);
  });

  it("links once when 10 identical signed requests race: one 200, the rest refused", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const body = await s.signLink(owner, agentAddress);
    const results = await Promise.all(Array.from({ length: 10 }, () => s.api("POST", "/agents/link", { body })));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).to.have.length(1);
    for (const r of results.filter((x) => x.status !== 200)) {
      expectErrorShape(r);
      expect(r.status).to.be.oneOf([401, 409]);
    }
  });

  it("answers 409 conflict for an agent already linked, even to a new owner with a valid signature", async () => {
    const [first, second] = [randomOwner(), randomOwner()];
    const { agentAddress } = await s.genesis();
    expect((await s.api("POST", "/agents/link", { body: await s.signLink(first, agentAddress) })).status).to.equal(200);
    const res = await s.api("POST", "/agents/link", { body: await s.signLink(second, agentAddress) });
    expectErrorShape(res, 409, "conflict");
    expect(await ownerOf(agentAddress)).to.equal(first.address);
  });

  it("answers 404 not_found for an agent the service does not know", async () => {
    const owner = randomOwner();
    const stranger = randomOwner().address;
    const before = await documentCounts(s.svc.store.db);
    const res = await s.api("POST", "/agents/link", { body: await s.signLink(owner, stranger) });
    expectErrorShape(res, 404, "not_found");
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(before);
  });

  it("lets an owner link several agents and list them with an owner key", async () => {
    const owner = randomOwner();
    const a = await s.genesis();
    const b = await s.genesis();
    for (const agent of [a, b]) {
      const res = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agent.agentAddress) });
      expect(res.status).to.equal(200);
    }
    const list = await s.api("GET", "/wallet/agents", { key: await ownerKey(s, owner) });
    expect(list.status).to.equal(200);
    const listed = list.body.agents.map((x: { address: string }) => x.address).sort();
    expect(listed).to.deep.equal([a.agentAddress, b.agentAddress].sort());
  });
});

describe("POST /agents/link needs the activation code (an agent's address alone claims nothing)", () => {
  const { s } = stackPerFile();

  it("refuses a link without the code or with another agent's code (403), and links nothing", async () => {
    const owner = randomOwner();
    const a = await s.genesis();
    const b = await s.genesis();
    const signed = await s.signLink(owner, a.agentAddress);
    const { activationCode: codeA, ...withoutCode } = signed;
    const codeB = (await s.signLink(owner, b.agentAddress)).activationCode;
    expect(codeA).to.match(/^[A-Za-z0-9_-]{22}$/);
    for (const body of [withoutCode, { ...withoutCode, activationCode: codeB }, { ...withoutCode, activationCode: "A".repeat(22) }]) {
      const res = await s.api("POST", "/agents/link", { body });
      expect(res.status).to.equal(403);
      expect(res.body).to.include({ error: "forbidden", status: 403 });
    }
    expect((await s.svc.store.agents.findOne({ address: a.agentAddress }))!.ownerAddress).to.equal(null);
    expect((await s.api("POST", "/agents/link", { body: signed })).status).to.equal(200);
  });

  it("links without the code when the agent's own key asks, and GET /wallet/activation gives the link again", async () => {
    const owner = randomOwner();
    const a = await s.genesis();
    const activation = await s.api("GET", `/wallet/activation?address=${a.agentAddress}`, { key: a.apiKey });
    expect(activation.status).to.equal(200);
    expect(activation.body).to.include({ agentAddress: a.agentAddress, linked: false });
    expect(activation.body.activationUrl).to.equal(
      (await s.api("GET", `/wallet/activation?address=${a.agentAddress}`, { key: a.apiKey })).body.activationUrl,
    );
    expect(activation.body.activationUrl).to.match(new RegExp(`/onboarding\\?agent=${a.agentAddress}&code=[A-Za-z0-9_-]{22}$`));
    // The code in its own field too, the same as in the link and in genesis's answer.
    const { activationCode: _code, ...withoutCode } = await s.signLink(owner, a.agentAddress);
    expect(activation.body.activationCode).to.equal(_code).and.equal(new URL(activation.body.activationUrl).searchParams.get("code"));
    const other = await s.genesis();
    expect((await s.api("POST", "/agents/link", { body: withoutCode, key: other.apiKey })).status).to.equal(403);
    expect((await s.api("POST", "/agents/link", { body: withoutCode, key: a.apiKey })).status).to.equal(200);
  });
});
