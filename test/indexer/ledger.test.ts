/**
 * The indexer and the real payment service together: POST /pay through real x402 sellers while the service's own
 * polling loop runs, then one explicit syncOnce() (queued behind any run in progress) before each check.
 */
import { expect } from "chai";
import type { Wallet } from "ethers";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc, startMisbehavingSeller, startV2Seller, type TestSeller } from "../helpers/sellers";

const USDC = 1_000_000n;

describe("indexer + payment service: the ledger's onchain confirmation", () => {
  let s: Stack;
  let owner: Wallet;
  const sellers: TestSeller[] = [];

  before(async () => {
    s = await startStack();
    owner = randomOwner();
  });
  after(async () => {
    for (const seller of sellers) await seller.close();
    await s?.close();
  });

  async function agent() {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 100n * USDC);
    return a;
  }

  const pay = (a: { agentAddress: string; apiKey: string }, serviceUrl: string, maxAmount = "10") =>
    s.api("POST", "/pay", { key: a.apiKey, body: { agentAddress: a.agentAddress, serviceUrl, maxAmount, intent: "indexer ledger test" } });

  async function entry(txnId: string) {
    await s.svc.indexer.syncOnce();
    const doc = await s.svc.store.payments.findOne({ txnId });
    expect(doc, txnId).to.not.equal(null);
    return doc!;
  }

  it("an approved payment: PaymentAuthorized and USDC AuthorizationUsed share the paymentId; confirmed at the settlement block", async () => {
    const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    sellers.push(seller);
    const a = await agent();
    const res = await pay(a, seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);

    const doc = await entry(res.body.transactionId);
    const settlement = await s.svc.chain.provider.getTransactionReceipt(res.body.txHash);
    expect(doc.onchain).to.deep.equal({ confirmed: true, blockNumber: settlement!.blockNumber });
    expect(doc.status).to.equal("approved");

    const events = await s.svc.store.chainEvents.find({ paymentId: res.body.paymentId }).toArray();
    expect(events.map((e) => e.event).sort()).to.deep.equal(["AuthorizationUsed", "PaymentAuthorized"]);
    const authorized = events.find((e) => e.event === "PaymentAuthorized")!;
    expect(authorized).to.include({
      txHash: res.body.authorizeTxHash,
      address: a.policyContract,
      agentAddress: a.agentAddress,
      confirmed: true,
    });
    expect(authorized.args).to.include({ merchant: "127.0.0.1", amount: USDC.toString() });
    expect(events.find((e) => e.event === "AuthorizationUsed")).to.include({ txHash: res.body.txHash, agentAddress: a.agentAddress });
  });

  it("a payment blocked on-chain (above perTxLimit): confirmed at the PaymentBlocked block", async () => {
    const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 6n * USDC });
    sellers.push(seller);
    const a = await agent();
    const res = await pay(a, seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body).to.include({ status: "blocked", reason: "per_tx_limit_exceeded", onchainEvent: "PaymentBlocked" });

    const doc = await entry(res.body.transactionId);
    const receipt = await s.svc.chain.provider.getTransactionReceipt(res.body.txHash);
    expect(doc.onchain).to.deep.equal({ confirmed: true, blockNumber: receipt!.blockNumber });
    expect(doc.status).to.equal("blocked");
    const event = await s.svc.store.chainEvents.findOne({ txHash: res.body.txHash });
    expect(event).to.include({ event: "PaymentBlocked", agentAddress: a.agentAddress, confirmed: true });
    expect(event!.args).to.include({ reason: "2", amount: (6n * USDC).toString() });
  });

  it("a payment whose seller fails after authorisation: failed, confirmed at the PaymentReleased block", async () => {
    const seller = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, price: USDC });
    sellers.push(seller);
    const a = await agent();
    const res = await pay(a, seller.resource);
    expect(res.status).to.equal(502);
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    const txnId: string = ledger.body.transactions[0].id;

    const doc = await entry(txnId);
    expect(doc.status).to.equal("failed");
    const released = await s.svc.store.chainEvents.findOne({ paymentId: doc.paymentId, event: "PaymentReleased" });
    expect(released, "PaymentReleased indexed").to.not.equal(null);
    expect(doc.onchain).to.deep.equal({ confirmed: true, blockNumber: released!.blockNumber });
    expect(
      await s.svc.store.chainEvents.countDocuments({ paymentId: doc.paymentId, event: "AuthorizationUsed" }),
      "cancelled, never used",
    ).to.equal(0);
  });
});
