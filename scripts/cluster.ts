/**
 * npm run cluster: a standalone chain, one CongoDB server and CLUSTER_INSTANCES (3) SpendGate processes, each with its
 * own operator key; CLUSTER_AGENTS (20) agents make CLUSTER_PAYMENTS (500) concurrent payments spread over the
 * instances, to the instances' own /sell/agent-intel. With --kill, the last instance is SIGKILLed mid-storm and not
 * restarted. Prints what happened and checks it (budgets, double payments, stuck payments, every instance's ledger);
 * exits 1 when a check fails. --keep leaves the cluster up until Ctrl-C.
 */
import { startCluster } from "./cluster/cluster";
import { fundAgents, onboardAgent, storm, type ClusterAgent, type PaymentResult } from "./cluster/client";
import { checkCluster } from "./cluster/check";

const INSTANCES = Number(process.env.CLUSTER_INSTANCES ?? 3);
const AGENTS = Number(process.env.CLUSTER_AGENTS ?? 20);
const PAYMENTS = Number(process.env.CLUSTER_PAYMENTS ?? 500);
const PRICE = 10_000n; // SELL_PRICE 0.01 USDC
const POLICY = { perTxLimit: "0.01", dailyBudget: "0.2", approvalThreshold: "0.01", allowlist: ["127.0.0.1"] };

async function main(): Promise<void> {
  const kill = process.argv.includes("--kill");
  const t0 = Date.now();
  const cluster = await startCluster({
    instances: INSTANCES,
    // Short leases, so a killed instance's work passes to the survivors within seconds (defaults: 30 s and 180 s).
    env: { LOCK_LEASE_MS: "2000", PAYMENT_LEASE_MS: "6000", MAX_PAYMENT_VALIDITY_SECONDS: "30", SELL_PRICE: "0.01" },
    log: (line) => console.log(line),
  });
  try {
    console.log(`cluster up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const agents: ClusterAgent[] = [];
    for (let i = 0; i < AGENTS; i += 5) {
      const batch = Array.from({ length: Math.min(5, AGENTS - i) }, (_, j) =>
        onboardAgent(cluster.instances[(i + j) % INSTANCES].url, cluster.chain.chainId, POLICY),
      );
      agents.push(...(await Promise.all(batch)));
    }
    const funded = 1_000_000n;
    await fundAgents(
      cluster.chain.rpcUrl,
      cluster.chain.addresses.usdc,
      agents.map((a) => a.agentAddress),
      funded,
    );
    console.log(
      `${AGENTS} agents onboarded over ${INSTANCES} instances and funded (daily budget ${POLICY.dailyBudget} USDC each, price 0.01)`,
    );

    const sellers = cluster.instances.slice(0, kill ? INSTANCES - 1 : INSTANCES).map((i) => `${i.url}/sell/agent-intel`);
    const victim = cluster.instances[INSTANCES - 1];
    let answered = 0;
    const started = Date.now();
    const results: PaymentResult[] = await storm({
      instances: cluster.instances,
      agents,
      payments: PAYMENTS,
      sellerOf: (i) => sellers[i % sellers.length],
      maxAmount: "0.01",
      onResult: () => {
        answered++;
        if (kill && answered === Math.floor(PAYMENTS / 5) && victim.alive) {
          console.log(`SIGKILL ${victim.name} after ${answered} answers`);
          void cluster.kill(victim);
        }
      },
    });
    const seconds = (Date.now() - started) / 1000;
    const ms = results.map((r) => r.ms).sort((a, b) => a - b);
    const q = (p: number) => ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)];
    const approved = results.filter((r) => r.status === 200).length;
    console.log(
      `${PAYMENTS} payments answered in ${seconds.toFixed(1)} s: ${approved} approved (${(approved / seconds).toFixed(1)}/s), p50 ${q(0.5)} ms, p95 ${q(0.95)} ms`,
    );
    console.log(`sent again after an instance died: ${results.filter((r) => r.tried.length > 1).length}`);
    for (const inst of cluster.instances) {
      console.log(
        `  ${inst.name}: first sent ${results.filter((r) => r.tried[0] === inst.name).length}, ${inst.alive ? "alive" : "killed"}`,
      );
    }

    const report = await checkCluster(cluster, agents, results, { dailyBudget: 200_000n, funded });
    console.log(`answers by HTTP status: ${JSON.stringify(report.answers)}`);
    console.log(
      `ledger: ${report.ledgerEntries} entries ${JSON.stringify(report.ledgerByStatus)}; ${report.confirmed} confirmed by the indexer`,
    );
    console.log(`USDC moved: ${Number(report.usdcMoved) / 1e6} (${Number(report.usdcMoved / PRICE)} payments of 0.01)`);
    const checks: [string, boolean][] = [
      [`budget overshoots: ${report.overshoots}`, report.overshoots === 0],
      [`double payments: ${report.doublePayments}`, report.doublePayments === 0],
      [`requests without a final answer: ${report.unresolved}`, report.unresolved === 0],
      [`payments stuck in flight: ${report.stuck}`, report.stuck === 0],
      [`one ledger entry per request: ${report.ledgerEntries}/${PAYMENTS}`, report.ledgerEntries === PAYMENTS],
      [
        `instances with an incomplete ledger: ${report.incompleteLedgers.length ? report.incompleteLedgers.join(", ") : "none"}`,
        report.incompleteLedgers.length === 0,
      ],
    ];
    for (const [line, ok] of checks) console.log(`${ok ? "ok  " : "FAIL"} ${line}`);
    if (checks.some(([, ok]) => !ok)) process.exitCode = 1;
    if (process.argv.includes("--keep")) {
      console.log("cluster kept up; Ctrl-C to stop");
      await new Promise<void>((r) => process.once("SIGINT", () => r()));
    }
  } finally {
    await cluster.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
