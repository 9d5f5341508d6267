/**
 * An instance dies between a scheme payment's authorisation and its end: the recovery step (resolveInFlight, what
 * the instance that takes the payment over runs; leases, locks and heartbeats are test/e2e/failover's) finishes it
 * from the chain. An upto ceiling is closed on-chain (what the seller settled stays paid, the rest is credited back);
 * the interrupted run, when it wakes, changes nothing more. A channel whose record is behind the seller's is brought
 * back in line by the seller's corrective 402 (a voucher killed on its way: test/schemes/crash.test.ts).
 */
import { expect } from "chai";
import { usdcBalance } from "../helpers/sellers";
import { spentToday } from "../helpers/payments";
import { startBatchSeller, startUptoSeller } from "../helpers/schemeSellers";
import { listen, sendJson } from "../helpers/sellerServer";
import { resolveInFlight } from "../../src/payments/recover";
import { expectAuditClean, schemesPerFile, storedChannel } from "./fixture";

describe("recovery of upto and channel payments", () => {
  const { s, keep, facilitator, fundedAgent, pay } = schemesPerFile(
    { CHANNEL_DEPOSIT_REQUESTS: "10" },
    { maxAmount: "1", intent: "interrupted" },
  );

  /** The recovery step on the agent's one payment in flight, as the instance taking it over runs it. */
  async function recoverInFlight(agentAddress: string) {
    const inFlight = await s.svc.store.payments.find({ agentAddress, phase: { $in: ["authorizing", "authorized"] } }).toArray();
    expect(inFlight).to.have.length(1);
    await resolveInFlight(s.svc.services.payments.room, inFlight[0].txnId, true);
  }

  it("an upto ceiling settled before the crash: recovery closes it, the settled part stays paid, the rest is credited", async () => {
    const seller = await startUptoSeller({ facilitator: facilitator().client, usdc: s.svc.config.usdcAddress, ceiling: 400_000n });
    keep(seller);
    const a = await fundedAgent();
    seller.setUsage(150_000n);
    let wake: () => void = () => undefined;
    const settled = seller.holdAfterSettlement(new Promise<void>((r) => (wake = r)));
    const running = pay(a, seller.resource);
    await settled;
    expect(await spentToday(s, a.policyContract), "the whole ceiling is counted while open").to.equal(400_000n);

    await recoverInFlight(a.agentAddress);
    const entry = (await s.svc.store.payments.findOne({ agentAddress: a.agentAddress, scheme: "upto" }))!;
    expect(entry).to.include({ phase: "done", status: "approved", amount: "150000", ceiling: "400000" });
    expect(await spentToday(s, a.policyContract)).to.equal(150_000n);
    expect(await usdcBalance(s, seller.payTo)).to.equal(150_000n);

    wake();
    const res = await running;
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ amount: "0.15", transactionId: entry.txnId });
    expect(await spentToday(s, a.policyContract), "credited once").to.equal(150_000n);
    await expectAuditClean(s, a.apiKey);
  });

  it("a channel record behind the seller's (a voucher's charge lost): the next voucher is corrected once by the seller's 402", async () => {
    const seller = await startBatchSeller({ facilitator: facilitator().client, usdc: s.svc.config.usdcAddress, price: 1_000n });
    keep(seller);
    const a = await fundedAgent();
    expect((await pay(a, seller.resource)).status).to.equal(200); // the deposit, and the first voucher
    expect((await pay(a, seller.resource)).status).to.equal(200);
    // What the channel would say had its last voucher's outcome been lost: one voucher behind the seller.
    const before = (await s.svc.store.channels.findOne({ agentAddress: a.agentAddress }))!;
    s.svc.services.payments.room.channelCopies.drop(before.channelId);
    await s.svc.store.channels.updateOne(
      { channelId: before.channelId },
      { $set: { charged: "1000", unsettled: [] }, $inc: { version: 1 } },
    );

    const next = await pay(a, seller.resource);
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
    expect(next.body.channel.cumulative).to.equal("0.003");
    expect(await storedChannel(s, a.agentAddress)).to.include({ charged: "3000" });
    const resync = await s.svc.store.payments.findOne({ agentAddress: a.agentAddress, detail: /resynchronised/ });
    expect(resync, "the refused voucher's entry says why").to.include({ status: "failed" });
    const { settle } = await seller.manager.claimAndSettle();
    expect(settle?.transaction).to.match(/^0x[0-9a-f]{64}$/);
    expect(await usdcBalance(s, seller.payTo)).to.equal(3_000n);
    await expectAuditClean(s, a.apiKey);
  });

  it("a seller that serves a voucher and answers 402 claiming it counted it earns no second voucher", async () => {
    const seller = await startBatchSeller({ facilitator: facilitator().client, usdc: s.svc.config.usdcAddress, price: 1_000n });
    keep(seller);
    const a = await fundedAgent();
    expect((await pay(a, seller.resource)).status).to.equal(200); // the deposit and the first voucher: charged 1000
    // In front of the real seller: once, it lets the real seller count the voucher, then answers a corrective 402 that
    // names the charge including that very voucher, to be paid a second time for one request.
    const probe = await fetch(seller.resource);
    const required = JSON.parse(Buffer.from(probe.headers.get("PAYMENT-REQUIRED") ?? "", "base64").toString()) as {
      accepts: { scheme: string; extra: Record<string, unknown> }[];
    };
    const front = await listen(async (req, res) => {
      const paid = await fetch(seller.resource, { headers: { "payment-signature": String(req.headers["payment-signature"] ?? "") } });
      await paid.arrayBuffer();
      for (const offer of required.accepts) offer.extra.channelState = { chargedCumulativeAmount: "2000" };
      const header = Buffer.from(JSON.stringify({ ...required, error: "cumulative_amount_mismatch" })).toString("base64");
      sendJson(res, 402, { error: "cumulative_amount_mismatch" }, { "PAYMENT-REQUIRED": header });
    });
    keep(front);
    const res = await pay(a, `${front.url}/resource`);
    expect(res.status, JSON.stringify(res.body)).to.equal(502);
    const channel = (await s.svc.store.channels.findOne({ agentAddress: a.agentAddress }))!;
    expect(channel.signed, "one voucher for the one request").to.equal("2000");
    expect(seller.served).to.equal(2);
  });
});
