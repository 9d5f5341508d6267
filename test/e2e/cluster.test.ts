/**
 * The must-show cluster run: a standalone chain, one CongoDB server and three SpendGate processes (each its own
 * operator key in the chain's OperatorSet), 20 agents, 500 concurrent payments spread over the instances, one instance
 * SIGKILLed mid-storm and never restarted. A request whose instance died is sent again with its Idempotency-Key to a
 * survivor, which answers with the payment's outcome once the survivors have finished it.
 */
import { expect } from "chai";
import { startCluster, type Cluster } from "../../scripts/cluster/cluster";
import { fundAgents, onboardAgent, storm, type ClusterAgent, type PaymentResult } from "../../scripts/cluster/client";
import { checkCluster } from "../../scripts/cluster/check";

const PAYMENTS = 500;
const AGENTS = 20;
const DAILY_BUDGET = 200_000n; // 0.2 USDC: 20 of an agent's 25 payments of 0.01 fit
const FUNDED = 1_000_000n;
const POLICY = { perTxLimit: "0.01", dailyBudget: "0.2", approvalThreshold: "0.01", allowlist: ["127.0.0.1"] };

describe("a cluster of three instances with one SIGKILLed mid-storm", function () {
  this.timeout(480_000);
  let cluster: Cluster;
  const agents: ClusterAgent[] = [];
  let results: PaymentResult[] = [];

  before(async () => {
    cluster = await startCluster({
      instances: 3,
      env: { LOCK_LEASE_MS: "2000", PAYMENT_LEASE_MS: "6000", MAX_PAYMENT_VALIDITY_SECONDS: "30", SELL_PRICE: "0.01" },
    });
    // Blocks every second beside automine, as on Base: chain time moves even when no payment is sent, so a killed
    // instance's unsent payment passes its validBefore and is resolved (on a bare automine chain time would stand still).
    await fetch(cluster.chain.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "evm_setIntervalMining", params: [1000] }),
    });
    for (let i = 0; i < AGENTS; i += 5) {
      agents.push(
        ...(await Promise.all([0, 1, 2, 3, 4].map((j) => onboardAgent(cluster.instances[(i + j) % 3].url, cluster.chain.chainId, POLICY)))),
      );
    }
    await fundAgents(
      cluster.chain.rpcUrl,
      cluster.chain.addresses.usdc,
      agents.map((a) => a.agentAddress),
      FUNDED,
    );
    const victim = cluster.instances[2];
    // The survivors sell; the victim takes a third of the payment requests and dies after a fifth are answered.
    const sellers = cluster.instances.slice(0, 2).map((i) => `${i.url}/sell/agent-intel`);
    let answered = 0;
    results = await storm({
      instances: cluster.instances,
      agents,
      payments: PAYMENTS,
      sellerOf: (i) => sellers[i % 2],
      maxAmount: "0.01",
      onResult: () => {
        if (++answered === PAYMENTS / 5) void cluster.kill(victim);
      },
    });
  });
  after(async () => {
    await cluster?.close();
  });

  it("resolves every request, overshoots no budget, pays nothing twice and keeps the ledger complete on every survivor", async () => {
    expect(cluster.instances.map((i) => i.alive)).to.deep.equal([true, true, false]);
    const rerouted = results.filter((r) => r.tried.length > 1);
    expect(rerouted.length, "requests the killed instance held").to.be.greaterThan(0);
    const report = await checkCluster(cluster, agents, results, { dailyBudget: DAILY_BUDGET, funded: FUNDED });
    const odd = results
      .filter((r) => ![200, 422, 502].includes(r.status))
      .map((r) => ({ status: r.status, body: r.body, tried: r.tried, ms: r.ms }));
    expect(report.unresolved, JSON.stringify({ answers: report.answers, odd })).to.equal(0);
    expect(report.overshoots).to.equal(0);
    expect(report.doublePayments).to.equal(0);
    expect(report.stuck).to.equal(0);
    expect(report.ledgerEntries).to.equal(PAYMENTS);
    expect(report.incompleteLedgers).to.deep.equal([]);
    // Each agent had 25 payments of 0.01 and a budget of 0.2: its 20 approved, the rest blocked (or failed while
    // the killed instance held them, their budget given back), and exactly the approved ones' USDC moved.
    const approved = report.answers["200"] ?? 0;
    expect(approved).to.be.at.most(AGENTS * 20);
    expect(report.usdcMoved).to.equal(BigInt(approved) * 10_000n);
    expect(report.ledgerByStatus.approved).to.equal(approved);
    for (const r of results.filter((x) => x.status === 200)) expect(r.body.status).to.equal("approved");
    for (const r of results.filter((x) => x.status === 422)) expect(r.body.reason).to.equal("daily_budget_exceeded");
  });
});
