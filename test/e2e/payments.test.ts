import { expect } from "chai";
import type { Wallet } from "ethers";
import { stackPerFile, randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { approvalDecision, policyEvents, spentToday } from "../helpers/payments";
import { payingAgent, stackSeller, fundedFacilitator, usdcBalance, type TestSeller } from "../helpers/sellers";

const USDC = 1_000_000n;

describe("POST /pay end to end (real chain, real x402 sellers)", () => {
  const { s, keep } = stackPerFile();
  let v2: TestSeller;
  let v1: TestSeller;
  let owner: Wallet;
  let ownerApiKey: string;

  before(async () => {
    const facilitator = await fundedFacilitator(s);
    v2 = await stackSeller(s, 1n * USDC, { facilitator });
    v1 = await stackSeller(s, USDC / 2n, { facilitator, version: 1 });
    owner = randomOwner();
    ownerApiKey = await ownerKey(s, owner);
    keep(v2, v1);
  });

  async function agent(policy: Parameters<Stack["onboard"]>[1] = {}) {
    return await payingAgent(s, { owner, policy, funds: 100n * USDC });
  }

  const pay = (a: { agentAddress: string; apiKey: string }, serviceUrl: string, maxAmount = "5", extra: Record<string, unknown> = {}) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl, maxAmount, intent: "e2e test purchase", ...extra },
    });

  it("pays a v2 seller: 200, balances move by exactly the price, ledger entry and remaining budget", async () => {
    const a = await agent();
    const [buyerBefore, sellerBefore] = [await usdcBalance(s, a.agentAddress), await usdcBalance(s, v2.payTo)];
    const res = await pay(a, v2.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ status: "approved", amount: "1", currency: "USDC", merchant: "127.0.0.1", remainingDailyBudget: "19" });
    expect(res.body.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(new Date(res.body.settledAt).getTime()).to.be.closeTo(Date.now(), 60_000);
    expect(res.body.response.status).to.equal(200);
    expect(v2.settlements).to.include(res.body.txHash);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(buyerBefore - USDC);
    expect(await usdcBalance(s, v2.payTo)).to.equal(sellerBefore + USDC);
    expect(await spentToday(s, a.policyContract)).to.equal(USDC);
    const events = await policyEvents(s, a.policyContract, res.body.authorizeTxHash);
    expect(events.map((e) => e.name)).to.deep.equal(["PaymentAuthorized"]);
    expect(events[0].args.paymentId).to.equal(res.body.paymentId);

    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(ledger.status).to.equal(200);
    expect(ledger.body.total).to.equal(1);
    expect(ledger.body.transactions[0]).to.include({
      id: res.body.transactionId,
      status: "approved",
      amount: "1",
      txHash: res.body.txHash,
      intent: "e2e test purchase",
    });
  });

  it("pays a v1 seller (JSON accepts body, X-PAYMENT header)", async () => {
    const a = await agent();
    const before = await usdcBalance(s, v1.payTo);
    const res = await pay(a, v1.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ status: "approved", amount: "0.5" });
    expect(await usdcBalance(s, v1.payTo)).to.equal(before + USDC / 2n);
  });

  it("pays SpendGate's own /sell/agent-intel through POST /pay (GET and POST) and gets the paid resource", async () => {
    const a = await agent();
    const payTo = s.svc.chain.operator.address; // SELL_PAY_TO unset: the operator receives
    const before = await usdcBalance(s, payTo);
    const res = await pay(a, `${s.url}/sell/agent-intel`, "0.05");
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ status: "approved", amount: "0.01", merchant: "127.0.0.1" });
    const intel = res.body.response.body;
    expect(intel.agent).to.include({ address: a.agentAddress, chainId: 8453 });
    expect(intel.payment).to.include({ status: "settled", txHash: res.body.txHash, token: "USDC", amount: "0.01", payer: a.agentAddress });
    expect(intel.payment.explorer).to.equal(`${s.url}/dev/explorer/tx/${res.body.txHash}`);
    const viaPost = await pay(a, `${s.url}/sell/agent-intel`, "0.05", { method: "POST", body: { topic: "portfolio" } });
    expect(viaPost.status, JSON.stringify(viaPost.body)).to.equal(200);
    expect(await usdcBalance(s, payTo)).to.equal(before + 20_000n);
  });

  it("holds a payment above the threshold as pending; the owner's approval pays it exactly once", async () => {
    const a = await agent({ approvalThreshold: "0.75" });
    const sellerBefore = await usdcBalance(s, v2.payTo);
    const res = await pay(a, v2.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    expect(res.body).to.include({ status: "pending", amount: "1", merchant: "127.0.0.1", intent: "e2e test purchase" });
    expect(res.body.approvalId).to.match(/^apr_[0-9a-f]{24}$/);
    expect(res.body.message).to.be.a("string").and.include("approval");
    expect(await usdcBalance(s, v2.payTo)).to.equal(sellerBefore);

    const list = await s.api("GET", "/approvals", { key: ownerApiKey });
    const item = list.body.approvals.find((x: { id: string }) => x.id === res.body.approvalId);
    expect(item).to.include({
      agentAddress: a.agentAddress,
      merchant: "127.0.0.1",
      amount: "1",
      status: "pending",
      intent: "e2e test purchase",
      resolvedAt: null,
    });

    const body = await approvalDecision(s, owner, item, "approve");
    const [r1, r2] = await Promise.all([
      s.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body }),
      s.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body }),
    ]);
    const ok = [r1, r2].filter((r) => r.status === 200);
    expect(ok, JSON.stringify([r1.body, r2.body])).to.have.length(1);
    expect(ok[0].body).to.include({ id: item.id, status: "approved", amount: "1", merchant: "127.0.0.1" });
    expect(ok[0].body.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect([r1, r2].find((r) => r.status !== 200)!.status).to.be.oneOf([401, 409]);
    expect(await usdcBalance(s, v2.payTo)).to.equal(sellerBefore + USDC);

    const again = await s.api("POST", `/approvals/${item.id}/approve`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "approve", s.now() + 1),
    });
    expect(again.status).to.equal(409);
    expect(again.body).to.include({ error: "conflict", status: 409 });
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: ownerApiKey });
    expect(ledger.body.transactions.map((t: { status: string }) => t.status)).to.deep.equal(["approved"]);
  });

  it("a denied approval moves nothing and closes the request", async () => {
    const a = await agent({ approvalThreshold: "0.75" });
    const before = await usdcBalance(s, a.agentAddress);
    const res = await pay(a, v2.resource);
    expect(res.status).to.equal(202);
    const item = { id: res.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "1" };
    const denied = await s.api("POST", `/approvals/${item.id}/deny`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "deny"),
    });
    expect(denied.status, JSON.stringify(denied.body)).to.equal(200);
    expect(denied.body).to.include({ id: item.id, status: "denied", merchant: "127.0.0.1", amount: "1" });
    expect(denied.body.deniedAt).to.be.a("string");
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}&status=denied`, { key: a.apiKey });
    expect(ledger.body.total).to.equal(1);
    const pending = await s.api("GET", `/approvals?address=${a.agentAddress}`, { key: ownerApiKey });
    expect(pending.body.approvals).to.have.length(0);
  });

  it("refuses approval actions that are not the owner's: agent key 403, bad signature 401, unknown 404", async () => {
    const a = await agent({ approvalThreshold: "0.75" });
    const res = await pay(a, v2.resource);
    const item = { id: res.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "1" };
    const body = await approvalDecision(s, owner, item, "approve");
    const asAgent = await s.api("POST", `/approvals/${item.id}/approve`, { key: a.apiKey, body });
    expect(asAgent.status).to.equal(403);
    expect((await s.api("GET", "/approvals", { key: a.apiKey })).status).to.equal(403);
    const forged = await approvalDecision(s, randomOwner(), item, "approve");
    const bad = await s.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body: forged });
    expect(bad.status).to.equal(401);
    const wrongAmount = await approvalDecision(s, owner, { ...item, amount: "0.5" }, "approve");
    expect((await s.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body: wrongAmount })).status).to.equal(401);
    const unknown = await s.api("POST", `/approvals/apr_${"0".repeat(24)}/approve`, { key: ownerApiKey, body });
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.include({ error: "not_found", status: 404 });
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
  });

  it("pending approvals expire after APPROVAL_TTL: listed no more, approve answers 409, the ledger says expired", async () => {
    const a = await agent({ approvalThreshold: "0.75" });
    const res = await pay(a, v2.resource);
    expect(res.status).to.equal(202);
    const item = { id: res.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "1" };
    const later = new Date(Date.now() + (s.svc.config.approvalTtlSeconds + 1) * 1000);
    expect(await s.svc.services.approvals.expire(later)).to.be.greaterThan(0);
    const list = await s.api("GET", `/approvals?address=${a.agentAddress}`, { key: ownerApiKey });
    expect(list.body.approvals).to.have.length(0);
    const approve = await s.api("POST", `/approvals/${item.id}/approve`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "approve"),
    });
    expect(approve.status).to.equal(409);
    expect(approve.body.message).to.include("expired");
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(ledger.body.transactions[0]).to.include({ status: "expired", reason: "approval_expired" });
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
  });

  it("an approval left half-way by a crash goes back to pending on recovery, and can then be decided", async () => {
    const a = await agent({ approvalThreshold: "0.75" });
    const res = await pay(a, v2.resource);
    await s.svc.store.approvals.updateOne({ approvalId: res.body.approvalId }, { $set: { status: "approving" } });
    expect(await s.svc.services.approvals.recover()).to.equal(1);
    const item = { id: res.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "1" };
    const denied = await s.api("POST", `/approvals/${item.id}/deny`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "deny"),
    });
    expect(denied.status).to.equal(200);
  });

  describe("blocked payments", () => {
    it("merchant_not_allowed: refused before contacting the seller, PaymentBlocked on-chain", async () => {
      const a = await agent({ allowlist: ["example.com"] });
      const unpaidBefore = v2.hits.unpaid;
      const res = await pay(a, v2.resource, "3");
      expect(res.status).to.equal(422);
      expect(res.body).to.include({
        status: "blocked",
        reason: "merchant_not_allowed",
        onchainEvent: "PaymentBlocked",
        merchant: "127.0.0.1",
        amount: "3",
      });
      expect(v2.hits.unpaid).to.equal(unpaidBefore);
      const [event] = await policyEvents(s, a.policyContract, res.body.txHash);
      expect(event.name).to.equal("PaymentBlocked");
      expect(event.args.reason).to.equal(1n);
      expect(event.args.merchant).to.equal("127.0.0.1");
      expect(event.args.amount).to.equal(3n * USDC);
    });

    it("per_tx_limit_exceeded with PaymentBlocked reason 2", async () => {
      const a = await agent({ perTxLimit: "0.5" });
      const res = await pay(a, v2.resource);
      expect(res.status).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "per_tx_limit_exceeded", onchainEvent: "PaymentBlocked", amount: "1" });
      const [event] = await policyEvents(s, a.policyContract, res.body.txHash);
      expect(event.args.reason).to.equal(2n);
    });

    it("daily_budget_exceeded after the budget is spent, with PaymentBlocked reason 3", async () => {
      const a = await agent({ dailyBudget: "1.5" });
      expect((await pay(a, v2.resource)).status).to.equal(200);
      const res = await pay(a, v2.resource);
      expect(res.status).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "daily_budget_exceeded", onchainEvent: "PaymentBlocked" });
      const [event] = await policyEvents(s, a.policyContract, res.body.txHash);
      expect(event.args.reason).to.equal(3n);
      expect(await spentToday(s, a.policyContract)).to.equal(USDC);
    });

    it("max_amount_exceeded: the caller's own ceiling, nothing on-chain and nothing paid", async () => {
      const a = await agent();
      const before = await usdcBalance(s, a.agentAddress);
      const res = await pay(a, v2.resource, "0.99");
      expect(res.status).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "max_amount_exceeded", onchainEvent: null, txHash: null, amount: "1" });
      expect(await usdcBalance(s, a.agentAddress)).to.equal(before);
    });

    it("policy_paused: the owner's pause switch blocks the next payment, resume lets it through", async () => {
      const a = await agent();
      const pause = await s.signPause(owner, a.agentAddress, true);
      const paused = await s.api("POST", `/agents/${a.agentAddress}/pause`, {
        key: ownerApiKey,
        body: { paused: true, humanSignature: pause.signature, timestamp: pause.timestamp },
      });
      expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
      const res = await pay(a, v2.resource);
      expect(res.status).to.equal(422);
      expect(res.body).to.include({ reason: "policy_paused", onchainEvent: "PaymentBlocked" });
      const [event] = await policyEvents(s, a.policyContract, res.body.txHash);
      expect(event.args.reason).to.equal(4n);
      const resume = await s.signPause(owner, a.agentAddress, false, s.now() + 1);
      expect(
        (
          await s.api("POST", `/agents/${a.agentAddress}/pause`, {
            key: ownerApiKey,
            body: { paused: false, epoch: resume.epoch, humanSignature: resume.signature, timestamp: resume.timestamp },
          })
        ).status,
      ).to.equal(200);
      expect((await pay(a, v2.resource)).status).to.equal(200);
    });

    it("answers an identical blocked request within 60 s from the first record (no second transaction)", async () => {
      const a = await agent({ perTxLimit: "0.5" });
      const first = await pay(a, v2.resource);
      const second = await pay(a, v2.resource);
      expect(second.status).to.equal(422);
      expect(second.body.txHash).to.equal(first.body.txHash);
      expect(second.body.transactionId).to.not.equal(first.body.transactionId);
      const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}&status=blocked`, { key: a.apiKey });
      expect(ledger.body.total).to.equal(2);
    });

    it("no_policy: an agent whose owner set no policy cannot pay", async () => {
      const g = await s.genesis();
      const res = await pay(g, v2.resource);
      expect(res.status).to.equal(422);
      expect(res.body).to.include({ error: "no_policy", status: 422 });
    });
  });
});
