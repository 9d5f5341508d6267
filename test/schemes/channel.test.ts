/**
 * POST /pay to a `batch-settlement` seller built on the STOCK x402 packages (@x402/evm's batch-settlement server with
 * its channel manager, and facilitator, over real HTTP): one deposit authorised on-chain under the policy, then
 * vouchers signed locally, a top-up when the deposit is spent; the seller claims and settles.
 */
import { expect } from "chai";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { usdcBalance } from "../helpers/sellers";
import { spentToday } from "../helpers/payments";
import { startBatchSeller } from "../helpers/schemeSellers";
import { USDC, expectAuditClean, schemesPerFile, storedChannel } from "./fixture";
const PRICE = 1_000n;

describe("batch-settlement (channel) payments through POST /pay", () => {
  const { s, keep, facilitator, fundedAgent, pay } = schemesPerFile(
    { CHANNEL_DEPOSIT_REQUESTS: "10" },
    { maxAmount: "0.01", intent: "per call" },
  );

  async function agentAndSeller(policy: Record<string, unknown> = {}) {
    const seller = await startBatchSeller({ facilitator: facilitator().client, usdc: s.svc.config.usdcAddress, price: PRICE });
    keep(seller);
    return { a: await fundedAgent(policy), seller };
  }

  it("opens a channel with one deposit, pays 25 requests with vouchers and two top-ups; the seller claims and settles", async () => {
    const { a, seller } = await agentAndSeller();
    const answers = [];
    for (let i = 0; i < 25; i++) {
      const res = await pay(a, seller.resource);
      expect(res.status, `request ${i}: ${JSON.stringify(res.body)}`).to.equal(200);
      answers.push(res.body);
    }
    expect(answers[0]).to.include({ status: "approved", scheme: "batch-settlement", amount: "0.001" });
    expect(answers[0].channel.depositTxHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(answers[1].channel.depositTxHash).to.equal(null);
    expect(answers[24].channel.cumulative).to.equal("0.025");
    // Deposits of 10 requests each: 3 of them (0.03), counted against the budget when authorised.
    const deposits = answers.filter((b) => b.channel.depositTxHash !== null);
    expect(deposits).to.have.length(3);
    expect(await spentToday(s, a.policyContract)).to.equal(30n * PRICE);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(10n * USDC - 30n * PRICE);
    expect(await usdcBalance(s, BATCH_SETTLEMENT_ADDRESS)).to.be.greaterThanOrEqual(30n * PRICE);
    const { settle } = await seller.manager.claimAndSettle();
    expect(settle?.transaction).to.match(/^0x[0-9a-f]{64}$/);
    expect(await usdcBalance(s, seller.payTo)).to.equal(25n * PRICE);
    const entries = await s.svc.store.payments.find({ agentAddress: a.agentAddress }).toArray();
    expect(entries.filter((e) => e.status === "approved" && e.scheme === "batch-settlement")).to.have.length(25);
    const channel = await storedChannel(s, a.agentAddress);
    expect(channel).to.include({ charged: "25000", signed: "25000", balance: "30000", status: "open" });
    expect(channel?.deposits).to.have.length(3);

    // Held, not spent: what the channel holds beyond the vouchers' charges.
    const limits = await s.api("GET", `/limits?address=${a.agentAddress}`, { key: a.apiKey });
    expect(limits.body.agents[0].heldInChannels).to.equal("0.005");
    const listed = await s.api("GET", `/agents/${a.agentAddress}/channels`, { key: a.apiKey });
    expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
    expect(listed.body.channels[0]).to.include({ status: "open", deposited: "0.03", charged: "0.025", claimed: "0.025", held: "0.005" });

    // Closed: the seller refunds the 0.005 not charged to the wallet, and the wallet credits it back to the windows.
    const closed = await s.api("POST", `/agents/${a.agentAddress}/channels/${channel?.channelId}/close`, { key: a.apiKey });
    expect(closed.status, JSON.stringify(closed.body)).to.equal(200);
    expect(closed.body).to.include({ status: "closed", refunded: "0.005", creditedNow: "0.005", held: "0" });
    expect(await usdcBalance(s, a.agentAddress)).to.equal(10n * USDC - 25n * PRICE);
    expect(await spentToday(s, a.policyContract)).to.equal(25n * PRICE);
    const after = await s.api("GET", `/limits?address=${a.agentAddress}`, { key: a.apiKey });
    expect(after.body.agents[0].heldInChannels).to.equal("0");
    // The ledger shows which deposit the refund was credited to, and in which transaction (SchemeCredited, indexed).
    await s.svc.indexer.syncOnce();
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}&limit=200`, { key: a.apiKey });
    const credited = ledger.body.transactions.filter((t: { creditTxHash: string | null }) => t.creditTxHash !== null);
    expect(credited).to.have.length(1);
    expect(credited[0].channel.depositPaymentId).to.equal(channel?.deposits[0].paymentId);
    expect(credited[0].creditTxHash).to.match(/^0x[0-9a-f]{64}$/);
    // Closing again moves nothing and credits nothing twice.
    const again = await s.api("POST", `/agents/${a.agentAddress}/channels/${channel?.channelId}/close`, { key: a.apiKey });
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body).to.include({ refunded: "0", creditedNow: "0" });
    expect(await spentToday(s, a.policyContract)).to.equal(25n * PRICE);

    // The next payment reopens the channel with a new deposit authorised under the policy.
    const reopened = await pay(a, seller.resource);
    expect(reopened.status, JSON.stringify(reopened.body)).to.equal(200);
    expect(reopened.body.channel.depositTxHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(reopened.body.channel.cumulative).to.equal("0.026");
    // An auditor reading only the chain explains every deposit and credit, and the ledger agrees with it.
    await expectAuditClean(s, a.apiKey);
  });

  it("an unknown channel answers 404, and so does a malformed id (as every malformed path parameter does)", async () => {
    const { a } = await agentAndSeller();
    const unknown = await s.api("POST", `/agents/${a.agentAddress}/channels/0x${"ab".repeat(32)}/close`, { key: a.apiKey });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error).to.equal("not_found");
    const bad = await s.api("POST", `/agents/${a.agentAddress}/channels/0x12/close`, { key: a.apiKey });
    expect(bad.status).to.equal(404);
    expect(bad.body.error).to.equal("not_found");
  });

  it("blocks a deposit to a seller over the daily budget on-chain, before any voucher", async () => {
    const { a, seller } = await agentAndSeller({ dailyBudget: "0.0005", perTxLimit: "0.0005" });
    const res = await pay(a, seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body.status).to.equal("blocked");
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    expect(seller.served).to.equal(0);
  });
});
