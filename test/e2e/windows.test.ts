import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { withSeller, mintUsdc, usdcBalance } from "../helpers/sellers";

const USDC = 1_000_000n;

describe("POST /pay against the richer policy windows", () => {
  const { s, seller } = withSeller(stackPerFile(), USDC);

  const payBody = (agentAddress: string, intent: string) => ({ agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent });

  it("50 simultaneous payments against a weekly cap (7) smaller than the daily budget (20): exactly 7 approved, 43 blocked weekly_budget_exceeded", async function () {
    this.timeout(240_000);
    const a = await s.onboard(randomOwner(), {
      perTxLimit: "1",
      dailyBudget: "20",
      weeklyBudget: "7",
      approvalThreshold: "1",
      allowlist: ["127.0.0.1"],
    });
    await mintUsdc(s, a.agentAddress, 60n * USDC);
    const before = await usdcBalance(s, a.agentAddress);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => s.api("POST", "/pay", { key: a.apiKey, body: payBody(a.agentAddress, `weekly ${i}`) })),
    );
    const statuses = results.map((r) => r.status);
    expect(
      statuses.filter((x) => x === 200),
      JSON.stringify(results.map((r) => r.body)),
    ).to.have.length(7);
    expect(statuses.filter((x) => x === 422)).to.have.length(43);
    for (const r of results.filter((x) => x.status === 422)) expect(r.body.reason).to.equal("weekly_budget_exceeded");

    const spending = await s.svc.chain.policyAt(a.policyContract, s.svc.chain.provider).spending();
    expect(spending.week).to.equal(7n * USDC);
    expect(spending.day).to.equal(7n * USDC);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before - 7n * USDC);

    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}&limit=200`, { key: a.apiKey });
    const of = (st: string) => ledger.body.transactions.filter((t: { status: string }) => t.status === st);
    expect(ledger.body.total).to.equal(50);
    expect(of("approved")).to.have.length(7);
    expect(of("blocked").map((t: { reason: string }) => t.reason)).to.deep.equal(Array(43).fill("weekly_budget_exceeded"));

    const limits = (await s.api("GET", `/limits?address=${a.agentAddress}`, { key: a.apiKey })).body.agents[0];
    expect(limits.windows.find((w: { window: string }) => w.window === "weekly")).to.include({ budget: "7", spent: "7", remaining: "0" });
    expect(limits.windows.find((w: { window: string }) => w.window === "daily")).to.include({ budget: "20", spent: "7", remaining: "13" });
  });

  it("a per-entry daily cap blocks with merchant_budget_exceeded, and maxPaymentsPerHour with velocity_exceeded", async function () {
    this.timeout(120_000);
    const a = await s.onboard(randomOwner(), {
      perTxLimit: "1",
      dailyBudget: "20",
      approvalThreshold: "1",
      allowlist: ["127.0.0.1"],
      merchantCaps: { "127.0.0.1": "2" },
    });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await s.api("POST", "/pay", { key: a.apiKey, body: payBody(a.agentAddress, `capped ${i}`) }));
    expect(statuses.map((r) => r.status)).to.deep.equal([200, 200, 422]);
    expect(statuses[2].body.reason).to.equal("merchant_budget_exceeded");
    const view = (await s.api("GET", `/limits?address=${a.agentAddress}`, { key: a.apiKey })).body.agents[0];
    expect(view.merchantRemainingToday).to.deep.equal({ "127.0.0.1": "0" });

    const b = await s.onboard(randomOwner(), {
      perTxLimit: "1",
      dailyBudget: "20",
      approvalThreshold: "1",
      allowlist: ["127.0.0.1"],
      maxPaymentsPerHour: 2,
    });
    await mintUsdc(s, b.agentAddress, 10n * USDC);
    const paid = [];
    for (let i = 0; i < 3; i++) paid.push(await s.api("POST", "/pay", { key: b.apiKey, body: payBody(b.agentAddress, `fast ${i}`) }));
    expect(paid.map((r) => r.status)).to.deep.equal([200, 200, 422]);
    expect(paid[2].body.reason).to.equal("velocity_exceeded");
    expect((await s.api("GET", `/limits?address=${b.agentAddress}`, { key: b.apiKey })).body.agents[0].velocity).to.include({
      paymentsThisHour: 2,
      remaining: 0,
    });
  });
});
