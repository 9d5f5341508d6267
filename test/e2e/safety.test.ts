/** Money safety under retries, outages, several instances and runaway agents. */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { Wallet } from "ethers";
import { stackPerFile, randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { approvalDecision, inFlightEntry, spentToday } from "../helpers/payments";
import { payingAgent, stackSeller, fundedFacilitator, startMisbehavingSeller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { normalizeAllowlist, proveMerchant } from "../../src/policy/allowlist";
import { holdingSeller } from "../helpers/sellerHolding";

const USDC = 1_000_000n;

describe("money safety: retries, outages, instances, runaway agents", () => {
  const { s, keep } = stackPerFile({ SELLER_TIMEOUT_MS: "1000", BLOCKED_ONCHAIN_PER_HOUR: "2" });

  async function agent(policy: Parameters<Stack["onboard"]>[1] = {}) {
    return await payingAgent(s, { policy, funds: 20n * USDC });
  }
  const body = (a: { agentAddress: string }, serviceUrl: string, maxAmount = "5") => ({
    agentAddress: a.agentAddress,
    serviceUrl,
    maxAmount,
    intent: "safety test",
  });

  it("a payment that settled although the seller never answered is approved (200), and a retry with its Idempotency-Key does not pay again", async () => {
    const seller = await holdingSeller(s.svc.config.usdcAddress, { settleWith: await fundedFacilitator(s) });
    keep(seller);
    const a = await agent();
    const first = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, seller.url), headers: { "Idempotency-Key": "slow-1" } });
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(first.body).to.include({ status: "approved", amount: "1" });
    expect(first.body.txHash).to.match(/^0x[0-9a-f]{64}$/);
    const retry = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, seller.url), headers: { "Idempotency-Key": "slow-1" } });
    expect(retry.status).to.equal(200);
    expect(retry.headers.get("idempotent-replayed")).to.equal("true");
    expect(seller.paidCount()).to.equal(1);
    expect(await usdcBalance(s, seller.payTo)).to.equal(USDC);
    expect(await spentToday(s, a.policyContract)).to.equal(USDC);
  });

  it("a failed payment's answer is kept under its Idempotency-Key: the retry replays the 502 and the seller is not paid twice", async () => {
    const seller: TestSeller = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, price: USDC });
    keep(seller);
    const a = await agent();
    const first = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, seller.resource), headers: { "Idempotency-Key": "fail-1" } });
    expect(first.status).to.equal(502);
    const retry = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, seller.resource), headers: { "Idempotency-Key": "fail-1" } });
    expect(retry.status).to.equal(502);
    expect(retry.body).to.deep.equal(first.body);
    expect(seller.hits.paid).to.equal(1);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
  });

  it("recovery leaves a payment another instance is working on (lease not expired) alone, and finishes it once the lease runs out", async () => {
    const a = await agent();
    const txnId = `txn_${randomBytes(12).toString("hex")}`;
    const paymentId = "0x" + randomBytes(32).toString("hex");
    await s.svc.store.payments.insertOne(
      inFlightEntry(txnId, a, USDC, { paymentId, leaseUntil: new Date(Date.now() + 60_000) }, { intent: "in flight elsewhere" }),
    );
    expect(await s.svc.services.payments.recover()).to.equal(0);
    expect((await s.svc.store.payments.findOne({ txnId }))!.phase).to.equal("authorizing");
    expect(await s.svc.services.payments.recover(new Date(Date.now() + 120_000))).to.equal(1);
    const done = (await s.svc.store.payments.findOne({ txnId }))!;
    expect(done).to.include({ phase: "done", status: "failed", reason: "not_authorized" });
    // Voided (state 2): no authorisation of it can land any more, so nothing can ever settle it (no cancel needed).
    expect(await s.svc.chain.policyAt(a.policyContract, s.svc.chain.provider).paymentState(paymentId)).to.equal(2n);
    expect(await s.svc.chain.usdc.authorizationState(a.agentAddress, paymentId)).to.equal(false);
  });

  it("a dead run's authorisation that landed before its hash was written: the void is refused, and recovery releases it", async () => {
    const a = await agent();
    const txnId = `txn_${randomBytes(12).toString("hex")}`;
    const paymentId = "0x" + randomBytes(32).toString("hex");
    const latest = (await s.svc.chain.provider.getBlock("latest"))!;
    const transfer = { payTo: Wallet.createRandom().address, amount: USDC, validAfter: 0n, validBefore: BigInt(latest.timestamp + 600) };
    const { payTo, validBefore } = transfer;
    const inFlight = {
      paymentId,
      payTo,
      validAfter: 0,
      validBefore: Number(validBefore),
      leaseUntil: new Date(Date.now() - 1),
      instanceId: "gone",
    };
    await s.svc.store.payments.insertOne(inFlightEntry(txnId, a, USDC, inFlight, { intent: "authorised, then killed" }));
    const proof = proveMerchant(normalizeAllowlist(["127.0.0.1"]).entries, "127.0.0.1")!;
    const authorized = await s.svc.services.payments.ops.authorize(a.policyContract, paymentId, "127.0.0.1", proof, transfer);
    expect(authorized.authorized).to.equal(true);
    expect(await spentToday(s, a.policyContract)).to.equal(USDC);
    expect(await s.svc.services.payments.recover()).to.equal(1);
    const done = (await s.svc.store.payments.findOne({ txnId }))!;
    expect(done).to.include({ phase: "done", status: "failed", reason: "settlement_failed" });
    expect(done.releaseTxHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(done.voidTxHash ?? null).to.equal(null);
    expect(await s.svc.chain.policyAt(a.policyContract, s.svc.chain.provider).paymentState(paymentId)).to.equal(0n);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
  });

  it("an approve that meets a seller outage answers 502 and leaves the approval pending for the owner to retry", async () => {
    const seller = await stackSeller(s, USDC);
    const owner = randomOwner();
    const a = await payingAgent(s, { owner, policy: { approvalThreshold: "0.5" }, funds: 5n * USDC });
    const pending = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, seller.resource) });
    expect(pending.status).to.equal(202);
    await seller.close();
    const key = await ownerKey(s, owner);
    const item = { id: pending.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "1" };
    const res = await s.api("POST", `/approvals/${item.id}/approve`, { key, body: await approvalDecision(s, owner, item, "approve") });
    expect(res.status).to.equal(502);
    const list = await s.api("GET", `/approvals?address=${a.agentAddress}`, { key });
    expect(list.body.approvals.map((x: { id: string; status: string }) => [x.id, x.status])).to.deep.equal([[item.id, "pending"]]);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
  });

  it("owner keys do not pay (403): paying is the agent's", async () => {
    const owner = randomOwner();
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    const res = await s.api("POST", "/pay", { key: await ownerKey(s, owner), body: body(a, "http://127.0.0.1:1/x") });
    expect(res.status).to.equal(403);
    expect(res.body).to.include({ error: "forbidden", status: 403 });
  });

  it("caps on-chain records of blocked attempts per agent per hour; only an identical refusal shares a record", async () => {
    const a = await agent({ allowlist: ["example.com"] });
    const r1 = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, "http://127.0.0.1:1/a", "1") });
    const r2 = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, "http://127.0.0.1:1/b", "1") });
    expect(r1.body.onchainEvent).to.equal("PaymentBlocked");
    expect(r2.body.txHash).to.equal(r1.body.txHash); // the same merchant, amount and reason: one on-chain record
    // Another amount is its own record (an entry never points at a PaymentBlocked of another amount): the second of
    // the hour (cap 2); past the cap, refusals stay in the ledger only.
    const x = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, "http://127.0.0.1:1/c", "2") });
    const y = await s.api("POST", "/pay", { key: a.apiKey, body: body(a, "http://127.0.0.2:1/d", "1") });
    expect(x.body.onchainEvent).to.equal("PaymentBlocked");
    expect(x.body.txHash).to.not.equal(r1.body.txHash);
    expect(y.status).to.equal(422);
    expect(y.body).to.include({ reason: "merchant_not_allowed", onchainEvent: null, txHash: null });
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(ledger.body.total).to.equal(4);
  });
});
