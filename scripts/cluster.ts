/**
 * npm run cluster: a standalone chain, one CongoDB server and CLUSTER_INSTANCES (3) SpendGate processes, each with its
 * own operator key; CLUSTER_AGENTS (20) agents make CLUSTER_PAYMENTS (500) concurrent payments spread over the
 * instances, to the instances' own /sell/agent-intel. With --kill, the last instance is SIGKILLed mid-storm and never
 * comes back: the time until each of its payments in flight was final on a survivor is printed (target 15 s, with the
 * default leases: failover goes by heartbeats), and no request may be answered 409 once they all are. With
 * --kill --restart-new-id, the killed instance is started again at once under a new INSTANCE_ID (a rescheduled
 * container). Prints what happened and checks it (budgets, double payments, stuck payments, every instance's ledger);
 * exits 1 when a check fails. --keep leaves the cluster up until Ctrl-C.
 */
import { startCluster, type Instance } from "./cluster/cluster";
import { type Takeover, watchTakeover } from "./cluster/failover";
import { fundAgents, onboardAgent, storm, type ClusterAgent, type PaymentResult } from "./cluster/client";
import { checkCluster } from "./cluster/check";

const INSTANCES = Number(process.env.CLUSTER_INSTANCES ?? 3);
const AGENTS = Number(process.env.CLUSTER_AGENTS ?? 20);
const PAYMENTS = Number(process.env.CLUSTER_PAYMENTS ?? 500);
const PRICE = 10_000n; // SELL_PRICE 0.01 USDC
const POLICY = { perTxLimit: "0.01", dailyBudget: "0.2", approvalThreshold: "0.01", allowlist: ["127.0.0.1"] };

async function main(): Promise<void> {
  const kill = process.argv.includes("--kill");
  const restartNewId = kill && process.argv.includes("--restart-new-id");
  const t0 = Date.now();
  const cluster = await startCluster({
    instances: INSTANCES,
    // The default leases (LOCK_LEASE_MS 30 s, PAYMENT_LEASE_MS 180 s): a killed instance's work passes on by heartbeats.
    // RPC_TIMEOUT_MS raised from its 10 s: on a machine this loaded the chain process can take longer than that to answer.
    env: { SELL_PRICE: "0.01", RPC_TIMEOUT_MS: process.env.RPC_TIMEOUT_MS ?? "30000" },
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
    type Killing = Promise<{ killedAt: number; watch: Awaited<ReturnType<typeof watchTakeover>>; restarted?: Instance }>;
    let killing = null as Killing | null; // set from the storm's callback
    const started = Date.now();
    const results: PaymentResult[] = await storm({
      instances: cluster.instances,
      agents,
      payments: PAYMENTS,
      sellerOf: (i) => sellers[i % sellers.length],
      maxAmount: "0.01",
      onResult: () => {
        answered++;
        if (kill && answered === Math.floor(PAYMENTS / 5) && victim.alive && !killing) {
          console.log(`SIGKILL ${victim.name} after ${answered} answers`);
          killing = (async () => {
            await cluster.kill(victim);
            const killedAt = Date.now();
            const watch = await watchTakeover(cluster, victim.name, killedAt);
            console.log(`${watch.payments.length} payments of ${victim.name} were in flight at the kill`);
            const restarted = restartNewId ? await cluster.restart(victim, `${victim.name}-rescheduled`) : undefined;
            if (restarted) console.log(`${victim.name} started again as ${restarted.name} ${Date.now() - killedAt} ms after the kill`);
            return { killedAt, watch, restarted };
          })();
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

    let takeover: { payments: Takeover[]; recoveredAt: number | null; conflictsAfter: number } | null = null;
    if (killing) {
      const { killedAt, watch } = await killing;
      const allFinal = await watch.allFinal;
      const payments = await watch.done();
      const recoveredAt = allFinal === null ? null : killedAt + allFinal;
      const conflictsAfter = results.reduce((n, r) => n + r.conflictsAt.filter((t) => recoveredAt === null || t > recoveredAt).length, 0);
      takeover = { payments, recoveredAt, conflictsAfter };
      for (const p of payments)
        console.log(
          `  ${p.txnId} (${p.phase} at the kill): ${p.finalMs === null ? "NOT FINAL" : `final in ${(p.finalMs / 1000).toFixed(1)} s`}, ${p.status ?? "-"}, by ${p.finishedBy ?? "-"}`,
        );
      console.log(
        `${victim.name}'s payments in flight: ${payments.length}, all final ${allFinal === null ? "NEVER (within 120 s)" : `${(allFinal / 1000).toFixed(1)} s after the kill`}; 409 answers before that: ${results.reduce((n, r) => n + r.conflictsAt.filter((t) => t > killedAt && (recoveredAt === null || t <= recoveredAt)).length, 0)}`,
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
      ...(takeover
        ? ([
            [
              `killed instance's payments in flight final within 15 s: ${takeover.payments.filter((p) => p.finalMs !== null && p.finalMs <= 15_000).length}/${takeover.payments.length} (longest ${(Math.max(0, ...takeover.payments.map((p) => p.finalMs ?? Infinity)) / 1000).toFixed(1)} s)`,
              takeover.payments.every((p) => p.finalMs !== null && p.finalMs <= 15_000),
            ],
            [
              `requests answered 409 after recovery: ${takeover.conflictsAfter}`,
              takeover.recoveredAt !== null && takeover.conflictsAfter === 0,
            ],
          ] as [string, boolean][])
        : []),
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
