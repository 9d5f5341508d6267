import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { stackSeller, fundedFacilitator, mintUsdc, usdcBalance, type TestSeller } from "../helpers/sellers";

const CENT = 10_000n; // 0.01 USDC

// POST /pay simulates the policy at the caller's maxAmount beside the seller's quote and keeps that answer only when
// it allows: a ceiling the policy refuses must never refuse a price under it that the policy allows.
describe("POST /pay: the policy simulated at the caller's ceiling, then at the price", () => {
  const { s, keep } = stackPerFile();
  let seller: TestSeller;
  let dear: TestSeller;

  before(async () => {
    const facilitator = await fundedFacilitator(s);
    seller = await stackSeller(s, CENT, { facilitator });
    dear = await stackSeller(s, 3n * CENT, { facilitator });
    keep(dear, seller);
  });

  it("pays a price the policy allows whatever the ceiling (above the approval threshold, the per-payment limit or the budget left)", async function () {
    this.timeout(120_000);
    const a = await s.onboard(randomOwner(), {
      perTxLimit: "0.05",
      dailyBudget: "0.07",
      approvalThreshold: "0.02",
      allowlist: ["127.0.0.1"],
    });
    await mintUsdc(s, a.agentAddress, 100n * CENT);
    const pay = (maxAmount: string, url = seller.resource) =>
      s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: url, maxAmount, intent: `ceiling ${maxAmount}` },
      });
    const before = await usdcBalance(s, a.agentAddress);

    // Ceiling allowed as it is; above the approval threshold; above the per-payment limit; then, with 0.03 spent, a
    // ceiling of 0.05 the budget left (0.04) refuses while the price (0.01) fits.
    for (const maxAmount of ["0.01", "0.03", "1", "0.05"]) {
      const res = await pay(maxAmount);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.include({ status: "approved", amount: "0.01" });
    }
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before - 4n * CENT);
    expect(await s.svc.store.approvals.countDocuments({ agentAddress: a.agentAddress })).to.equal(0);

    // A price above the threshold still waits for the owner; a price over the budget left is still refused on-chain.
    const held = await pay("0.05", dear.resource);
    expect(held.status, JSON.stringify(held.body)).to.equal(202);
    for (let i = 0; i < 3; i++) expect((await pay("0.01")).status).to.equal(200);
    const refused = await pay("0.01");
    expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
    expect(refused.body).to.include({ status: "blocked", reason: "daily_budget_exceeded" });
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before - 7n * CENT);
  });
});
