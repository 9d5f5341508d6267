/**
 * A hostile agent, owner or seller against the running service (real chain, store, HTTP and x402): bad input, races
 * and lies are clear answers in the error shape, never a 500, and cost the operator nothing it does not meter.
 */
import { expect } from "chai";
import type { Wallet } from "ethers";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";
import { mintUsdc, startMisbehavingSeller } from "../helpers/sellers";

describe("hostile callers against the service", () => {
  let s: Stack;
  let owner: Wallet;

  before(async () => {
    s = await startStack();
    owner = randomOwner();
  });
  after(async () => {
    await s?.close();
  });

  it("refuses a maxAmount the contract cannot record (2^64 base units or more) as bad input, sending no transaction", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    const operator = await s.svc.chain.operator.getAddress();
    const nonceBefore = await s.svc.chain.provider.getTransactionCount(operator);
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      // Not allowlisted: refused before any seller is asked, and recorded on-chain at this amount.
      body: {
        agentAddress: a.agentAddress,
        serviceUrl: "https://not-allowed.example/x",
        maxAmount: "18446744073709.551616",
        intent: "edge",
      },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(400);
    expectErrorShape(res, 400, "bad_request");
    expect(await s.svc.chain.provider.getTransactionCount(operator)).to.equal(nonceBefore);
  });

  it("refuses a seller whose payTo is the paying wallet itself off-chain, instead of a reverted authorisation and a 502", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10_000_000n);
    const seller = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, payTo: a.agentAddress });
    try {
      const operator = await s.svc.chain.operator.getAddress();
      const nonceBefore = await s.svc.chain.provider.getTransactionCount(operator);
      const res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "pay myself" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "unsupported_payment" });
      expect(seller.hits.paid).to.equal(0);
      expect(await s.svc.chain.provider.getTransactionCount(operator)).to.equal(nonceBefore);
    } finally {
      await seller.close();
    }
  });
});
