import { expect } from "chai";
import { type PolicyRequest, buildSignedPolicy } from "../../src/policy/signedPolicy";
import { getAddress } from "ethers";
import { EMPTY_ROOT, allowlistRoot, normalizeAllowlist } from "../../src/policy/allowlist";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { linkedAgent, ownerKey } from "../helpers/owner";
import { documentCounts, expectErrorShape } from "../helpers/store";

const POLICY = { perTxLimit: "1.5", dailyBudget: "10", allowlist: ["api.example.com", "*.data.example"], approvalThreshold: "0.75" };

describe("spend limits: GET /limits and POST /limits (owner's SetPolicy signature, on-chain policy)", () => {
  let s: Stack;
  before(async () => {
    s = await startStack();
  });
  after(async () => s?.close());

  const predicted = (agent: string) => getAddress(agent); // the agent wallet is its policy contract
  /** The policy as the contract holds it, in base units. */
  const onchain = async (policyContract: string) => {
    const c = s.svc.chain.policyAt(policyContract, s.svc.chain.provider);
    const p = await c.policy();
    return {
      perTxLimit: p.perTxLimit,
      dailyBudget: p.dailyBudget,
      allowlistRoot: p.allowlistRoot,
      approvalThreshold: p.approvalThreshold,
      owner: getAddress(await c.owner()),
      agent: getAddress(await c.agent()),
      lastSetPolicy: await c.lastTimestamp(0),
    };
  };
  const rootOf = (list: string[]) => allowlistRoot(normalizeAllowlist(list).entries);

  it("answers deployed false and the factory's predicted policyContract before any policy", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const res = await s.api("GET", `/limits?address=${agentAddress}`, { key: apiKey });
    expect(res.status).to.equal(200);
    expect(res.body.agents).to.have.length(1);
    const [view] = res.body.agents;
    expect(view).to.include({ address: agentAddress, deployed: false, policyContract: predicted(agentAddress) });
    expect(view).to.include({ perTxLimit: "0", dailyBudget: "0", approvalThreshold: "0" });
    expect(view.allowlist).to.deep.equal([]);
    expect(await s.svc.chain.provider.getCode(view.policyContract)).to.equal("0x");
  });

  it("deploys the policy at the predicted address with the signed values on-chain (201, agent key relays)", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const body = await s.policyBody(owner, agentAddress, POLICY);
    const res = await s.api("POST", "/limits", { key: apiKey, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({
      status: "deployed",
      agentAddress,
      perTxLimit: "1.5",
      dailyBudget: "10",
      approvalThreshold: "0.75",
      policyContract: predicted(agentAddress),
    });
    expect(res.body.allowlist).to.deep.equal(["api.example.com", "*.data.example"]);

    const receipt = await s.svc.chain.provider.getTransactionReceipt(res.body.txHash);
    expect(receipt, "txHash is a mined transaction").to.not.equal(null);
    expect(receipt!.status).to.equal(1);

    expect(await onchain(res.body.policyContract)).to.deep.equal({
      perTxLimit: 1_500_000n,
      dailyBudget: 10_000_000n,
      allowlistRoot: rootOf(POLICY.allowlist),
      approvalThreshold: 750_000n,
      owner: owner.address,
      agent: agentAddress,
      lastSetPolicy: BigInt(body.timestamp as number),
    });

    const read = await s.api("GET", "/limits", { key: apiKey });
    expect(read.status).to.equal(200);
    expect(read.body.agents[0]).to.include({ address: agentAddress, deployed: true, perTxLimit: "1.5", dailyBudget: "10" });
    expect(read.body.agents[0].allowlist).to.deep.equal(["api.example.com", "*.data.example"]);
  });

  it("never returns the caller's API key in clear in the POST /limits response", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const res = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(owner, agentAddress, POLICY) });
    expect(res.status).to.equal(201);
    expect(res.body.apiKey).to.be.a("string").and.not.equal(apiKey);
    expect(JSON.stringify(res.body)).to.not.include(apiKey.slice(3));
    expect(res.body.apiKey.replace(/[^0-9a-f]/g, "").length).to.be.lessThan(16);
  });

  it("updates a deployed policy in place with a newer owner signature (owner key relays)", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const first = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(owner, agentAddress, POLICY) });
    expect(first.status).to.equal(201);

    const next = {
      perTxLimit: "2",
      dailyBudget: "25.000001",
      allowlist: ["API.Example.com", "https://shop.example.org:8443/x"],
      approvalThreshold: "1",
    };
    const body = await s.policyBody(owner, agentAddress, next, s.now() + 1);
    const second = await s.api("POST", "/limits", { key: await ownerKey(s, owner), body });
    expect(second.status, JSON.stringify(second.body)).to.equal(201);
    expect(second.body.policyContract).to.equal(first.body.policyContract);
    expect(second.body.txHash).to.not.equal(first.body.txHash);
    expect(second.body.allowlist).to.deep.equal(["api.example.com", "shop.example.org"]);
    expect(await onchain(first.body.policyContract)).to.deep.include({
      perTxLimit: 2_000_000n,
      dailyBudget: 25_000_001n,
      allowlistRoot: rootOf(["api.example.com", "shop.example.org"]),
      approvalThreshold: 1_000_000n,
      lastSetPolicy: BigInt(body.timestamp as number),
    });
  });

  it("refuses an allowlist change carried by the previous signature (401), and nothing changes on-chain", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const signed = await s.policyBody(owner, agentAddress, POLICY);
    const deployed = await s.api("POST", "/limits", { key: apiKey, body: signed });
    expect(deployed.status).to.equal(201);
    const before = await onchain(deployed.body.policyContract);
    const blockBefore = await s.svc.chain.provider.getBlockNumber();

    const widened = { ...signed, allowlist: ["*"] };
    const res = await s.api("POST", "/limits", { key: apiKey, body: widened });
    expectErrorShape(res, 401);
    const raised = { ...signed, approvalThreshold: "10" };
    expectErrorShape(await s.api("POST", "/limits", { key: apiKey, body: raised }), 401);

    expect(await onchain(deployed.body.policyContract)).to.deep.equal(before);
    expect(await s.svc.chain.provider.getBlockNumber(), "no transaction was sent").to.equal(blockBefore);
  });

  it("refuses the same signed body twice (replay), and nothing changes on-chain", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const body = await s.policyBody(owner, agentAddress, POLICY);
    expect((await s.api("POST", "/limits", { key: apiKey, body })).status).to.equal(201);
    const blockBefore = await s.svc.chain.provider.getBlockNumber();
    const replay = await s.api("POST", "/limits", { key: apiKey, body });
    expectErrorShape(replay);
    expect(replay.status).to.be.oneOf([401, 409]);
    expect(await s.svc.chain.provider.getBlockNumber()).to.equal(blockBefore);
  });

  it("refuses a policy signed by anyone but the agent's owner (401), nothing deployed", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const byStranger = await s.policyBody(randomOwner(), agentAddress, POLICY);
    const counts = await documentCounts(s.svc.store.db);
    const res = await s.api("POST", "/limits", { key: apiKey, body: byStranger });
    expectErrorShape(res, 401);
    expect(await s.svc.chain.isDeployed(predicted(agentAddress))).to.equal(false);
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(counts);
  });

  it("refuses the owner's signature made for another agent's policy (401)", async () => {
    const owner = randomOwner();
    const a = await linkedAgent(s, owner);
    const b = await linkedAgent(s, owner);
    const signedForA = await s.policyBody(owner, a.agentAddress, POLICY);
    const res = await s.api("POST", "/limits", { key: b.apiKey, body: { ...signedForA, agentAddress: b.agentAddress } });
    expectErrorShape(res, 401);
    expect(await s.svc.chain.isDeployed(predicted(b.agentAddress))).to.equal(false);
  });

  it("refuses an expired or far-future signed timestamp (401)", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    for (const ts of [s.now() - 1000, s.now() + 86_400]) {
      const res = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(owner, agentAddress, POLICY, ts) });
      expectErrorShape(res, 401);
    }
    expect(await s.svc.chain.isDeployed(predicted(agentAddress))).to.equal(false);
  });

  it("answers 409 for an agent not linked to an owner yet", async () => {
    const { agentAddress, apiKey } = await s.genesis();
    const res = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(randomOwner(), agentAddress, POLICY) });
    expectErrorShape(res, 409, "conflict");
    expect(await s.svc.chain.isDeployed(predicted(agentAddress))).to.equal(false);
  });

  it("stores an empty allowlist as the zero root (deny every merchant)", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const res = await s.api("POST", "/limits", {
      key: apiKey,
      body: await s.policyBody(owner, agentAddress, { ...POLICY, allowlist: [] }),
    });
    expect(res.status).to.equal(201);
    expect((await onchain(res.body.policyContract)).allowlistRoot).to.equal(EMPTY_ROOT);
  });

  it("enforces only the list the owner signed: a server that swaps a payee gets 401, and straight to the contract a revert", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const pinned = { ...POLICY, payees: { "api.example.com": "0x00000000000000000000000000000000000bee01" } };
    const signed = await s.policyBody(owner, agentAddress, pinned);
    const thief = "0x00000000000000000000000000000000000bad00";
    // The page or the server puts its own payee in the request, with her signature over hers.
    const swapped = { ...signed, payees: { "api.example.com": thief } };
    expectErrorShape(await s.api("POST", "/limits", { key: apiKey, body: swapped }), 401);
    // A stolen operator relays her signature with its own list straight to the factory: the contract refuses it too.
    const { policy } = buildSignedPolicy(swapped as unknown as PolicyRequest);
    const chain = s.svc.chain;
    const agent = (await s.svc.store.agents.findOne({ address: agentAddress }))!;
    const reverted = await chain
      .sendAndWait((o) =>
        chain.factory.deployAgent(
          agent.signerAddress,
          owner.address,
          agent.ownerBound === true,
          policy,
          signed.timestamp as number,
          signed.humanSignature as string,
          o,
        ),
      )
      .then(
        () => false,
        () => true,
      );
    expect(reverted).to.equal(true);
    expect(await chain.isDeployed(agentAddress)).to.equal(false);
    // Her own list, as she signed it, deploys.
    expect((await s.api("POST", "/limits", { key: apiKey, body: signed })).status).to.equal(201);
  });

  it("refuses a list of more than 64 entries (400) before anything is signed or sent", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const allowlist = Array.from({ length: 65 }, (_, i) => `host${i}.example.com`);
    const body = await s.policyBody(owner, agentAddress, { ...POLICY, allowlist });
    const counts = await documentCounts(s.svc.store.db);
    const res = await s.api("POST", "/limits", { key: apiKey, body });
    expectErrorShape(res, 400, "bad_request");
    expect(res.body.message).to.include("at most 64");
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(counts);
  });

  it("signs and keeps the entries whose sellers must sign their offers, and GET /limits shows them", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const body = await s.policyBody(owner, agentAddress, { ...POLICY, requireSignedOffer: ["API.example.com"] });
    const res = await s.api("POST", "/limits", { key: apiKey, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body.requireSignedOffer).to.deep.equal(["api.example.com"]);
    const view = (await s.api("GET", `/limits?address=${agentAddress}`, { key: apiKey })).body.agents[0];
    expect(view.requireSignedOffer).to.deep.equal(["api.example.com"]);
    // An entry not in the allowlist is refused.
    const stray = await s.policyBody(owner, agentAddress, { ...POLICY, requireSignedOffer: ["elsewhere.example"] });
    const refused = await s.api("POST", "/limits", { key: apiKey, body: stray });
    expectErrorShape(refused, 400, "bad_request");
    expect(refused.body.details.unknownRequireSignedOffer).to.deep.equal(["elsewhere.example"]);
  });

  it("refuses allowlist entries that are not host names (400) before anything is signed or sent", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const body = await s.policyBody(owner, agentAddress, { ...POLICY, allowlist: ["api.example.com", "not a host!"] });
    const counts = await documentCounts(s.svc.store.db);
    expectErrorShape(await s.api("POST", "/limits", { key: apiKey, body }), 400, "bad_request");
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(counts);
  });
});
