/**
 * An owner who moved the agent's operator away from this service (SetOperator, relayed by anyone straight on the
 * contract): its payments get a clear 409 and this service sends nothing (no reverted authorisation at the owner's gas
 * cost); once the owner sets the operator back, payments go through again. An agent whose operator is the cluster's
 * OperatorSet pays as before.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { ownerKey, setOperatorOnChain } from "../helpers/owner";
import { approvalDecision } from "../helpers/payments";
import { expectErrorShape } from "../helpers/store";
import { stackSeller, mintUsdc, type TestSeller } from "../helpers/sellers";
import { agentHeaders, callTool, errorOf, mcpClient, textOf } from "../mcp/client";

const USDC = 1_000_000n;

describe("an agent whose owner moved its operator away from this service", () => {
  const { s, keep } = stackPerFile();
  let seller: TestSeller;
  let owner: Wallet;
  let ownerApiKey: string;

  before(async () => {
    // The indexer runs when a test says so: the cached policy goes stale exactly where a test wants it to.
    await s.svc.indexer.stop();
    seller = await stackSeller(s, USDC);
    owner = randomOwner();
    ownerApiKey = await ownerKey(s, owner);
    keep(seller);
  });

  const pay = (a: { agentAddress: string; apiKey: string }, serviceUrl = seller.resource) =>
    s.api("POST", "/pay", { key: a.apiKey, body: { agentAddress: a.agentAddress, serviceUrl, maxAmount: "5", intent: "operator" } });
  const nonce = () => s.svc.chain.provider.getTransactionCount(s.svc.chain.operator.address);
  const gasTransactions = async () =>
    ((await s.api("GET", "/owner/gas", { key: ownerApiKey })).body as { transactions: number }).transactions;

  function expectMovedAway(res: { status: number; body: Record<string, unknown> }, to: string) {
    expect(res.status, JSON.stringify(res.body)).to.equal(409);
    expect(res.body).to.include({ error: "conflict", status: 409 });
    expect(res.body.message).to.include("set another operator on-chain").and.include(to).and.include("SetOperator back");
    expect(res.body.message).to.include(s.svc.chain.operator.address);
  }

  it("answers 409 and sends nothing, for a payment and for a refusal it would record; pays again once set back", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    expect((await pay(a)).status).to.equal(200); // the payment path now holds the policy in its cache

    const elsewhere = Wallet.createRandom().address;
    await setOperatorOnChain(s, owner, a.policyContract, elsewhere);
    await s.svc.indexer.syncOnce(); // the indexer sees OperatorSet: the cached policy is read again
    const [nonceBefore, gasBefore, paidBefore] = [await nonce(), await gasTransactions(), seller.settlements.length];
    expectMovedAway(await pay(a), elsewhere);
    // A merchant the allowlist refuses would be recorded on-chain (PaymentBlocked): not for this agent now.
    expectMovedAway(await pay(a, "https://not-allowed.example/x"), elsewhere);
    expect(await nonce()).to.equal(nonceBefore);
    expect(await gasTransactions()).to.equal(gasBefore);
    expect(seller.settlements.length).to.equal(paidBefore);

    // Set back, and the indexer has not run yet: the cache says "another operator", the chain says this service.
    await setOperatorOnChain(s, owner, a.policyContract, s.svc.chain.operator.address);
    const res = await pay(a);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ status: "approved", amount: "1" });
  });

  it("answers the owner's approval of a pending payment with the 409 and sends nothing", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], approvalThreshold: "0.5" });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const pending = await pay(a);
    expect(pending.status, JSON.stringify(pending.body)).to.equal(202);
    const item = { id: pending.body.approvalId as string, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "1" };

    const elsewhere = Wallet.createRandom().address;
    await setOperatorOnChain(s, owner, a.policyContract, elsewhere);
    const nonceBefore = await nonce();
    const body = await approvalDecision(s, owner, item, "approve");
    expectMovedAway(await s.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body }), elsewhere);
    expect(await nonce()).to.equal(nonceBefore);
    // Nothing was authorised: the approval waits for the owner again.
    const approvals = await s.api("GET", `/approvals?address=${a.agentAddress}`, { key: ownerApiKey });
    expect(JSON.stringify(approvals.body)).to.include(item.id);
    expect((await s.svc.store.approvals.findOne({ approvalId: item.id }))?.status).to.equal("pending");

    // Set back: the same signature pays it (the refusal did not use it up), and only once.
    await setOperatorOnChain(s, owner, a.policyContract, s.svc.chain.operator.address);
    const paid = await s.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ id: item.id, status: "approved", amount: "1" });
    expectErrorShape(await s.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body }), 409);
  });

  it("answers the MCP pay tool with the same 409 as an isError result, and sends nothing", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const elsewhere = Wallet.createRandom().address;
    await setOperatorOnChain(s, owner, a.policyContract, elsewhere);
    const client = await mcpClient(s.url, agentHeaders(a));
    try {
      const nonceBefore = await nonce();
      const r = await callTool(client, "pay", { serviceUrl: seller.resource, maxAmount: "5", intent: "operator over MCP" });
      expect(r.isError, textOf(r)).to.equal(true);
      expect(errorOf(r)).to.include({ error: "conflict", status: 409 });
      expect(errorOf(r).message).to.include("set another operator on-chain").and.include(elsewhere);
      expect(await nonce()).to.equal(nonceBefore);
    } finally {
      await client.close();
    }
  });

  it("reads the policy's operator in the policy's one round trip", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    const calls: string[] = [];
    const provider = s.svc.chain.rpc;
    const call = provider.call.bind(provider);
    provider.call = (to, data) => {
      calls.push(to);
      return call(to, data);
    };
    try {
      const policy = await s.svc.services.policies.onchainAt(a.policyContract);
      expect(policy.operator).to.equal(s.svc.chain.operator.address);
    } finally {
      provider.call = call;
    }
    expect(calls).to.have.length(1);
  });
});
