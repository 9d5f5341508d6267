/**
 * POST /pay to an `upto` seller built on the STOCK x402 packages (@x402/evm's upto server and facilitator, over real
 * HTTP): the wallet signs the price as a ceiling, the policy authorises the ceiling on-chain, the seller settles what
 * the request used, and the rest is credited back to the budget windows (creditCeiling).
 */
import { expect } from "chai";
import { usdcBalance } from "../helpers/sellers";
import { spentToday } from "../helpers/payments";
import { startUptoSeller } from "../helpers/schemeSellers";
import { USDC, expectAuditClean, schemesPerFile } from "./fixture";

describe("upto (metered) payments through POST /pay", () => {
  const { s, keep, facilitator, fundedAgent, pay } = schemesPerFile({}, { maxAmount: "1", intent: "metered" });

  async function agentAndSeller(ceiling: bigint, policy: Record<string, unknown> = {}) {
    const seller = await startUptoSeller({ facilitator: facilitator().client, usdc: s.svc.config.usdcAddress, ceiling });
    keep(seller);
    return { a: await fundedAgent(policy), seller };
  }

  it("pays less than the ceiling: the seller gets what it settled, the rest is credited back on-chain", async () => {
    const { a, seller } = await agentAndSeller(500_000n);
    seller.setUsage(123_456n);
    const res = await pay(a, seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ status: "approved", scheme: "upto", amount: "0.123456", ceiling: "0.5" });
    expect(await usdcBalance(s, seller.payTo)).to.equal(123_456n);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(10n * USDC - 123_456n);
    // The ceiling was counted in full when authorised; the unsettled part came back.
    expect(await spentToday(s, a.policyContract)).to.equal(123_456n);
    const entry = await s.svc.store.payments.findOne({ txnId: res.body.transactionId });
    expect(entry).to.include({ status: "approved", phase: "done", scheme: "upto", amount: "123456", ceiling: "500000" });
    expect(entry?.creditTxHash).to.match(/^0x[0-9a-f]{64}$/);
    const listed = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(listed.body.transactions[0]).to.include({ scheme: "upto", creditTxHash: entry?.creditTxHash });
    // A second payment opens a new ceiling: the first is closed.
    seller.setUsage(500_000n);
    const again = await pay(a, seller.resource);
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body.amount).to.equal("0.5");
    expect(await spentToday(s, a.policyContract)).to.equal(623_456n);
    await expectAuditClean(s, a.apiKey);
  });

  it("blocks a ceiling over the per-transaction limit on-chain, and counts nothing", async () => {
    const { a, seller } = await agentAndSeller(2n * USDC, { perTxLimit: "1" });
    const res = await pay(a, seller.resource, { maxAmount: "5" });
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body).to.include({ status: "blocked", reason: "per_tx_limit_exceeded" });
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    expect(seller.served).to.equal(0);
  });

  it("a caller may restrict the schemes: exact only finds nothing to pay at an upto-only seller", async () => {
    const { a, seller } = await agentAndSeller(100_000n);
    const res = await pay(a, seller.resource, { schemes: ["exact"] });
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body.reason).to.equal("unsupported_payment");
    const bad = await pay(a, seller.resource, { schemes: ["lightning"] });
    expect(bad.status).to.equal(400);
  });
});
