/**
 * The sandbox's demo seller (/dev/seller/exact): the service's own x402 seller at any price, at a second payee, or late;
 * paid through POST /pay by an agent whose owner pinned the first payee. (Its 404 in production: test/e2e/startProd.test.ts.)
 */
import { expect } from "chai";
import { SECOND_PAYEE } from "../../src/http/routes/devSeller";
import { SCHEME_PAYEE } from "../../src/dev/schemeSellers";
import { mintUsdc, usdcBalance } from "../helpers/sellers";
import { randomOwner, startStack, type Stack } from "../helpers/stack";

describe("sandbox demo sellers: /dev/seller/exact, /upto and /batch-settlement", function () {
  this.timeout(120_000);
  let s: Stack;
  before(async () => {
    s = await startStack();
  });
  after(async () => s?.close());

  it("asks the price and the payee of its query, in the x402 challenge", async () => {
    const first = await fetch(`${s.url}/dev/seller/exact?price=0.25`);
    expect(first.status).to.equal(402);
    expect(first.headers.get("x-service-amount")).to.equal("0.25");
    expect(first.headers.get("x-service-receiver")).to.equal(s.svc.chain.operator.address);
    const second = await fetch(`${s.url}/dev/seller/exact?price=3&payee=2`);
    expect(second.headers.get("x-service-amount")).to.equal("3");
    expect(second.headers.get("x-service-receiver")).to.equal(SECOND_PAYEE);
  });

  it("answers after `delay` seconds", async () => {
    const started = Date.now();
    expect((await fetch(`${s.url}/dev/seller/exact?delay=1`)).status).to.equal(402);
    expect(Date.now() - started).to.be.at.least(1_000);
  });

  it("refuses a price, payee or delay it cannot be (400), and any other scheme (404)", async () => {
    for (const q of ["price=0", "price=abc", "price=1000.000001", "payee=3", "delay=31", "delay=-1"]) {
      const res = await fetch(`${s.url}/dev/seller/exact?${q}`);
      expect(res.status, q).to.equal(400);
      expect(await res.json()).to.include({ error: "bad_request", status: 400 });
    }
    expect((await fetch(`${s.url}/dev/seller/permit`)).status).to.equal(404);
    for (const q of ["upto?ceiling=0", "upto?charge=0.2", "upto?ceiling=0.1&charge=0.11", "batch-settlement?price=x"]) {
      const res = await fetch(`${s.url}/dev/seller/${q}`);
      expect(res.status, q).to.equal(400);
    }
  });

  it("is paid at its price through POST /pay, and a pinned payee refuses its second payee on-chain", async () => {
    const owner = randomOwner();
    const agent = await s.onboard(owner, {
      allowlist: ["127.0.0.1"],
      payees: { "127.0.0.1": s.svc.chain.operator.address },
      perTxLimit: "5",
      dailyBudget: "20",
      approvalThreshold: "5",
    });
    await mintUsdc(s, agent.agentAddress, 10_000_000n);
    const pay = (query: string) =>
      s.api("POST", "/pay", {
        key: agent.apiKey,
        body: { serviceUrl: `${s.url}/dev/seller/exact?${query}`, maxAmount: "5", intent: "demo seller" },
      });
    const before = await usdcBalance(s, s.svc.chain.operator.address);
    const paid = await pay("price=1.5");
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved", amount: "1.5" });
    expect((await usdcBalance(s, s.svc.chain.operator.address)) - before).to.equal(1_500_000n);
    const refused = await pay("price=1.5&payee=2");
    expect(refused.status).to.equal(422);
    expect(refused.body).to.include({ status: "blocked", reason: "payee_not_allowed", onchainEvent: "PaymentBlocked" });
    expect(await usdcBalance(s, SECOND_PAYEE)).to.equal(0n);
  });

  it("sells upto (a ceiling signed, what was used charged) and batch-settlement (a channel, then vouchers) to POST /pay", async () => {
    const owner = randomOwner();
    const agent = await s.onboard(owner, {
      allowlist: ["127.0.0.1"],
      payees: { "127.0.0.1": SCHEME_PAYEE },
      perTxLimit: "1",
      dailyBudget: "20",
      approvalThreshold: "5",
    });
    await mintUsdc(s, agent.agentAddress, 10_000_000n);
    const pay = (path: string) =>
      s.api("POST", "/pay", { key: agent.apiKey, body: { serviceUrl: `${s.url}/dev/seller/${path}`, maxAmount: "1", intent: "demo" } });
    const upto = await pay("upto?ceiling=0.10&charge=0.03");
    expect(upto.status, JSON.stringify(upto.body)).to.equal(200);
    expect(upto.body).to.include({ status: "approved" });
    expect(await usdcBalance(s, SCHEME_PAYEE)).to.equal(30_000n);
    for (let i = 0; i < 3; i++) {
      const voucher = await pay("batch-settlement?price=0.01");
      expect(voucher.status, JSON.stringify(voucher.body)).to.equal(200);
      expect(voucher.body).to.include({ status: "approved", amount: "0.01" });
    }
    const channels = await s.svc.store.channels.find({ agentAddress: agent.agentAddress }).toArray();
    expect(channels.map((c) => c.receiver.toLowerCase())).to.deep.equal([SCHEME_PAYEE.toLowerCase()]);
  });
});
