import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { spentToday } from "../helpers/payments";
import { withSeller, mintUsdc, usdcBalance } from "../helpers/sellers";

const USDC = 1_000_000n;

describe("POST /pay under concurrency and retries", () => {
  const { s, seller } = withSeller(stackPerFile(), USDC);

  const payBody = (agentAddress: string, intent: string) => ({ agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent });

  it("20 simultaneous payments of one agent whose budget covers 5: exactly 5 approved, 15 blocked, nothing lost", async () => {
    const a = await s.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "5", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 50n * USDC);
    const before = await usdcBalance(s, a.agentAddress);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.api("POST", "/pay", { key: a.apiKey, body: payBody(a.agentAddress, `purchase ${i}`) })),
    );
    const statuses = results.map((r) => r.status);
    expect(
      statuses.filter((x) => x === 200),
      JSON.stringify(results.map((r) => r.body)),
    ).to.have.length(5);
    expect(statuses.filter((x) => x === 422)).to.have.length(15);
    for (const r of results.filter((x) => x.status === 422)) expect(r.body.reason).to.equal("daily_budget_exceeded");
    expect(await spentToday(s, a.policyContract)).to.equal(5n * USDC);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before - 5n * USDC);

    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}&limit=200`, { key: a.apiKey });
    const byStatus = (st: string) => ledger.body.transactions.filter((t: { status: string }) => t.status === st).length;
    expect(ledger.body.total).to.equal(20);
    expect(byStatus("approved")).to.equal(5);
    expect(byStatus("blocked")).to.equal(15);
    const ledgerIds = new Set(ledger.body.transactions.map((t: { id: string }) => t.id));
    for (const r of results) expect(ledgerIds.has(r.body.transactionId)).to.equal(true);
    const intents = new Set(ledger.body.transactions.map((t: { intent: string }) => t.intent));
    expect(intents.size).to.equal(20);
  });

  it("the same request sent 10 times with one Idempotency-Key pays once and answers the same result", async () => {
    const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const before = await usdcBalance(s, a.agentAddress);
    const body = payBody(a.agentAddress, "one idempotent purchase");
    const results = await Promise.all(
      Array.from({ length: 10 }, () => s.api("POST", "/pay", { key: a.apiKey, body, headers: { "Idempotency-Key": "order-42" } })),
    );
    expect(results.map((r) => r.status)).to.deep.equal(Array(10).fill(200));
    expect(new Set(results.map((r) => r.body.txHash)).size).to.equal(1);
    expect(results.filter((r) => r.headers.get("idempotent-replayed") === "true")).to.have.length(9);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before - USDC);
    expect(await spentToday(s, a.policyContract)).to.equal(USDC);

    const reused = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { ...body, intent: "something else" },
      headers: { "Idempotency-Key": "order-42" },
    });
    expect(reused.status).to.equal(409);
    expect(reused.body).to.include({ error: "conflict", status: 409 });
  });

  it("payments of different agents run in parallel", async () => {
    const agents = await Promise.all([0, 1, 2, 3].map(() => s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] })));
    for (const a of agents) await mintUsdc(s, a.agentAddress, 5n * USDC);
    const results = await Promise.all(
      agents.map((a) => s.api("POST", "/pay", { key: a.apiKey, body: payBody(a.agentAddress, "parallel") })),
    );
    expect(results.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
    for (const a of agents) expect(await spentToday(s, a.policyContract)).to.equal(USDC);
  });

  it("payments queued behind another of their agent read its document once, once their turn comes: a pause relayed meanwhile stops them", async () => {
    // The last test of the file: the indexer stops, so that only the payments read the agent's document.
    await s.svc.indexer.stop();
    const owner = randomOwner();
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 5n * USDC);
    const { services, store } = s.svc;
    const lock = services.ctx.agentLock;
    // Reads of the agent's document, and payments reaching its lock, counted as this service makes them.
    const [findOne, run] = [store.agents.findOne.bind(store.agents), lock.run.bind(lock)];
    let [reads, queued] = [0, 0];
    Object.assign(store.agents, {
      findOne: (...args: Parameters<typeof findOne>) => {
        if ((args[0] as { address?: string } | undefined)?.address === a.agentAddress) reads++;
        return findOne(...args);
      },
    });
    Object.assign(lock, {
      run: (...args: Parameters<typeof run>) => {
        if (args[0] === a.agentAddress) queued++;
        return run(...args);
      },
    });
    try {
      // Another payment of the agent runs here (its lock held): these three wait for it.
      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      let locked: () => void = () => undefined;
      const holding = new Promise<void>((r) => (locked = r));
      const running = lock.run(a.agentAddress, async () => {
        locked();
        await held;
      });
      await holding;
      const paying = [0, 1, 2].map((i) => s.api("POST", "/pay", { key: a.apiKey, body: payBody(a.agentAddress, `queued ${i}`) }));
      for (const deadline = Date.now() + 10_000; queued < 4 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 5));
      expect(queued, "payments waiting for the agent's lock").to.equal(4);
      // The owner pauses the agent while they wait (the kill switch waits for no payment).
      const timestamp = s.now();
      const { signature, epoch } = await s.signPause(owner, a.agentAddress, true, timestamp);
      const doc = (await findOne({ address: a.agentAddress }))!;
      await services.controls.setPaused(doc, { paused: true, epoch, humanSignature: signature, timestamp });
      release();
      await running;
      const results = await Promise.all(paying);
      for (const r of results) expect(r.body.reason, JSON.stringify(r.body)).to.equal("policy_paused");
      // Each read it once, after its wait (it read it twice: on arrival, and again once its turn came).
      expect(reads, "reads of the agent's document by the queued payments").to.equal(3);
    } finally {
      Object.assign(store.agents, { findOne });
      Object.assign(lock, { run });
    }
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
  });
});
