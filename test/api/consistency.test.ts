/**
 * One way to say each thing: POST /pay names its agent only when it must (an agent key names one), POST /agents/link
 * takes the owner's signature as humanSignature like every other owner call (ownerSignature kept as an alias), and the
 * SDK refuses a call missing required input with a SpendGateError before any request.
 */
import { expect } from "chai";
import { SpendGateClient } from "../../packages/sdk/src/client";
import { SpendGateError } from "../../packages/sdk/src/errors";
import { mintUsdc } from "../helpers/sellers";
import { randomOwner, startStack, type Stack } from "../helpers/stack";

describe("API consistency: POST /pay's agent, /agents/link's humanSignature, the SDK's errors", function () {
  this.timeout(120_000);
  let s: Stack;
  before(async () => {
    s = await startStack();
  });
  after(async () => s?.close());

  it("POST /pay without agentAddress pays for the agent its key names; another agent's address stays refused", async () => {
    const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"], perTxLimit: "1", dailyBudget: "5", approvalThreshold: "1" });
    const b = await s.onboard(randomOwner());
    await mintUsdc(s, a.agentAddress, 1_000_000n);
    const body = { serviceUrl: `${s.url}/sell/agent-intel`, maxAmount: "0.05", intent: "no agentAddress" };
    const paid = await s.api("POST", "/pay", { key: a.apiKey, body });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved", amount: "0.01" });
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(ledger.body.transactions.map((t: { status: string }) => t.status)).to.deep.equal(["approved"]);
    const other = await s.api("POST", "/pay", { key: a.apiKey, body: { ...body, agentAddress: b.agentAddress } });
    expect(other.status).to.equal(403);
    expect(other.body).to.include({ error: "forbidden" });
  });

  it("POST /agents/link takes humanSignature, or ownerSignature alone, and refuses neither or two that differ", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    const { ownerSignature, ...rest } = await s.signLink(owner, agentAddress);
    const missing = await s.api("POST", "/agents/link", { body: rest });
    expect(missing.status).to.equal(400);
    expect(JSON.stringify(missing.body)).to.include("humanSignature");
    const other = await s.signLink(randomOwner(), agentAddress);
    const both = await s.api("POST", "/agents/link", {
      body: { ...rest, humanSignature: ownerSignature, ownerSignature: other.ownerSignature },
    });
    expect(both.status).to.equal(400);
    const linked = await s.api("POST", "/agents/link", { body: { ...rest, humanSignature: ownerSignature } });
    expect(linked.status, JSON.stringify(linked.body)).to.equal(200);
    expect(linked.body).to.include({ agentAddress, ownerAddress: owner.address });
  });

  it("the SDK throws SpendGateError (bad_request) for a call missing required input, before any request", async () => {
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests++;
      return fetch(input, init);
    };
    const sg = new SpendGateClient({ baseUrl: s.url, apiKey: "sk_x", fetch: counting });
    const refused = async (call: () => Promise<unknown>) => {
      const err: unknown = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(SpendGateError);
      expect(err).to.include({ error: "bad_request", status: 400 });
    };
    await refused(() => sg.limits());
    await refused(() => sg.balance());
    await refused(() => sg.pay({ serviceUrl: "", maxAmount: "0.05", intent: "x" }));
    await refused(() => sg.approve("", { humanSignature: "0x00", timestamp: 1 }));
    await refused(() => sg.deny("apr_1", undefined as never));
    expect(requests).to.equal(0);
    expect(() => new SpendGateClient({ baseUrl: "not a url", apiKey: "k" })).to.throw(SpendGateError);
  });
});
