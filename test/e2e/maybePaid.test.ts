/**
 * Once the payment header has left, every outcome is "maybe paid" and is decided from the chain; what the store keeps
 * is bounded; an Idempotency-Key is never freed for a payment that may have moved money, and after an interruption
 * the key answers with the outcome recovery read from the chain.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { payingAgent, fundedFacilitator, startMisbehavingSeller, usdcBalance, type MisbehaviourMode } from "../helpers/sellers";
import { inFlightEntry } from "../helpers/payments";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { idempotencyScope, requestHashOf } from "../../src/payments/idempotency";

const USDC = 1_000_000n;

describe("maybe paid: outcomes after the payment header left", () => {
  const { s, keep } = stackPerFile();

  async function setup(mode: MisbehaviourMode) {
    const seller = await startMisbehavingSeller(mode, {
      usdc: s.svc.config.usdcAddress,
      price: USDC,
      facilitator: await fundedFacilitator(s),
    });
    keep(seller);
    const a = await payingAgent(s, { funds: 10n * USDC });
    const body = { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: `maybe paid: ${mode}` };
    return { seller, a, body };
  }

  it("a seller that settles, then answers with a broken redirect: 200 approved, and a retry with the key pays nothing more", async () => {
    const { seller, a, body } = await setup("settleThenBrokenRedirect");
    const key = randomBytes(8).toString("hex");
    const first = await s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": key } });
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(first.body).to.include({ status: "approved", txHash: seller.settlements[0] });
    const retry = await s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": key } });
    expect(retry.status).to.equal(200);
    expect(retry.body).to.deep.equal(first.body);
    expect(seller.settlements).to.have.length(1);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(9n * USDC);
  });

  it("a seller that settles, then answers JSON nested 50,000 deep: 200 approved with the body as text, and the store keeps working", async () => {
    const { a, body } = await setup("settleThenDeepBody");
    const key = randomBytes(8).toString("hex");
    const res = await s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": key } });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).to.equal(200);
    expect(res.body.response.body)
      .to.be.a("string")
      .and.match(/^\[\[\[/);
    const again = await s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": key } });
    expect(again.status).to.equal(200);
    expect((await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey })).status).to.equal(200);
    expect((await s.api("GET", "/health")).status).to.equal(200);
  });

  it("a seller body with keys MongoDB cannot store ($where, dotted): kept as text, answered the same on a retry", async () => {
    const { a, body } = await setup("settleThenDollarKeys");
    const key = randomBytes(8).toString("hex");
    const res = await s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": key } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(JSON.parse(res.body.response.body)).to.deep.equal({ $where: "1", "a.b": { $gt: 1 }, ok: true });
    const again = await s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": key } });
    expect(again.body).to.deep.equal(res.body);
  });

  it("refuses an agent POST body nested deeper than 32 levels with 400 (it could be neither stored nor serialised)", async () => {
    const { a } = await setup("free200");
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: {
        agentAddress: a.agentAddress,
        serviceUrl: "http://127.0.0.1:9/x",
        maxAmount: "1",
        intent: "deep",
        method: "POST",
        body: deep,
      },
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal("bad_request");
  });

  it("after an interruption, a retry with the key gets the outcome recovery read from the chain, at once", async () => {
    const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    const body = { agentAddress: a.agentAddress, serviceUrl: "http://127.0.0.1:9/x", maxAmount: "1", intent: "interrupted", method: "GET" };
    const key = randomBytes(8).toString("hex");
    const scope = idempotencyScope(a.apiKey.slice(0, 9) + a.agentAddress, key);
    const long = new Date(Date.now() - 200_000);
    // What a process killed mid-payment leaves: the key taken, the payment in flight (never authorised here).
    await s.svc.store.idempotency.insertOne({
      scope,
      requestHash: requestHashOf(body),
      state: "in_progress",
      response: null,
      createdAt: long,
      expiresAt: new Date(Date.now() + 3_600_000),
    });
    const inFlight = { paymentId: "0x" + randomBytes(32).toString("hex"), leaseUntil: new Date(0) };
    const base = { policyAddress: a.agentAddress, serviceUrl: body.serviceUrl, intent: body.intent, idempotencyScope: scope };
    await s.svc.store.payments.insertOne(inFlightEntry(`txn_${randomBytes(12).toString("hex")}`, a, USDC, inFlight, base, long));
    expect(await s.svc.services.payments.recover()).to.equal(1);
    const t0 = Date.now();
    const retry = await s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": key } });
    expect(Date.now() - t0).to.be.lessThan(2_000);
    expect(retry.status, JSON.stringify(retry.body)).to.equal(502);
    expect(retry.body).to.include({ error: "upstream_error", status: 502 });
    expect(retry.headers.get("Idempotent-Replayed")).to.equal("true");
  });
});
