/**
 * npm run chaos: the production shape (scripts/cluster: a chain process, a CongoDB process, CHAOS_INSTANCES (3)
 * SpendGate processes) under a payment storm for CHAOS_SECONDS (300), while faults strike at random every
 * CHAOS_FAULT_EVERY_MS (10,000) on average:
 *   - a service instance is SIGKILLed and started again after 1-8 s, half the time under a new INSTANCE_ID;
 *   - the chain dies (its port refuses and resets connections) for 2-10 s and comes back with its state, or hangs
 *     (its process SIGSTOPped: connections accepted, nothing answered) for 2-15 s;
 *   - the store likewise (dies, or hangs).
 * The embedded chain and CongoDB keep their state in memory only: "dies" closes a gate in front of their port (what a
 * node or mongod restarted on its data directory looks like to its clients), "hangs" stops the real process.
 * Each payment is retried with its Idempotency-Key (on another live instance) until it gets a final answer. At the end
 * every fault is undone, the requests finish, and the invariants are checked from the chain and the database: budget
 * overshoots, double payments, lost requests (no final answer), payments stuck in flight, 5xx answers by status, and
 * the longest time any payment waited for its final answer. Exits 1 when an invariant fails.
 */
import { connectStore } from "../src/store";
import { startCluster, type Cluster, type Instance } from "./cluster/cluster";
import { fundAgents, onboardAgent, type ClusterAgent } from "./cluster/client";
import { checkCluster } from "./cluster/check";
import { startGate, type Gate } from "./cluster/gate";
import type { PaymentResult } from "./cluster/client";

const SECONDS = Number(process.env.CHAOS_SECONDS ?? 300);
const INSTANCES = Number(process.env.CHAOS_INSTANCES ?? 3);
const AGENTS = Number(process.env.CHAOS_AGENTS ?? 20);
const CONCURRENCY = Number(process.env.CHAOS_CONCURRENCY ?? 8);
const FAULT_EVERY_MS = Number(process.env.CHAOS_FAULT_EVERY_MS ?? 10_000);
/** 10 payments of 0.01 a day per agent: budgets run out mid-storm, so an overshoot would show. */
const POLICY = { perTxLimit: "0.01", dailyBudget: "0.1", approvalThreshold: "0.01", allowlist: ["127.0.0.1"] };
const RETRY = new Set([409, 429, 503]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rand = (lo: number, hi: number) => lo + Math.random() * (hi - lo);
const stamp = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s`;

async function main(): Promise<void> {
  const t0 = Date.now();
  const gates: { chain?: Gate; store?: Gate } = {};
  const cluster = await startCluster({
    instances: INSTANCES,
    env: { SELL_PRICE: "0.01", RPC_TIMEOUT_MS: process.env.RPC_TIMEOUT_MS ?? "15000" },
    via: async ({ rpcUrl, mongoUri }) => {
      const chain = new URL(rpcUrl);
      const store = new URL(mongoUri);
      gates.chain = await startGate(chain.hostname, Number(chain.port));
      gates.store = await startGate(store.hostname, Number(store.port));
      return {
        rpcUrl: `http://127.0.0.1:${gates.chain.port}`,
        mongoUri: `mongodb://127.0.0.1:${gates.store.port}/?serverSelectionTimeoutMS=3000`,
      };
    },
  });
  const { chain: chainGate, store: storeGate } = gates as Required<typeof gates>;
  const statuses: Record<string, number> = {};
  const results: PaymentResult[] = [];
  const faults: string[] = [];
  /** The 409 answers by message (the start of it). */
  const conflicts = new Map<string, number>();
  /** Each key's last 409 message: for a key left without a final answer, the payment it was waiting behind. */
  const lastConflict = new Map<string, string>();
  let stopping = false;
  try {
    console.log(`cluster up in ${((Date.now() - t0) / 1000).toFixed(1)} s; chain and store behind gates`);
    const agents: ClusterAgent[] = [];
    for (let i = 0; i < AGENTS; i++) agents.push(await onboardAgent(cluster.instances[i % INSTANCES].url, cluster.chain.chainId, POLICY));
    const funded = 1_000_000n;
    await fundAgents(
      cluster.chain.rpcUrl,
      cluster.chain.addresses.usdc,
      agents.map((a) => a.agentAddress),
      funded,
    );
    console.log(`${AGENTS} agents onboarded and funded; storm and faults for ${SECONDS} s`);

    const live = () => cluster.instances.filter((x) => x.alive);
    let next = 0;
    const started = Date.now();
    /** One payment, retried under its key until a final answer (or 10 minutes). */
    const pay = async (i: number): Promise<void> => {
      const agent = agents[i % agents.length];
      const key = `chaos-${i}`;
      const tried: string[] = [];
      const conflictsAt: number[] = [];
      const first = Date.now();
      // One body per key (a retry with another body is refused): the seller is one instance, at its address whether
      // it is up or not (a restarted instance comes back at the same address; meanwhile the seller is unreachable).
      const seller = `${cluster.instances[(i + 1) % INSTANCES].url}/sell/agent-intel`;
      for (let attempt = 0; Date.now() - first < 600_000; attempt++) {
        const sellers = live();
        const inst = sellers[(i + attempt) % Math.max(1, sellers.length)];
        if (!inst) {
          await sleep(500);
          continue;
        }
        tried.push(inst.name);
        try {
          const res = await fetch(`${inst.url}/pay`, {
            method: "POST",
            headers: { "Content-Type": "application/json", Authorization: `Bearer ${agent.apiKey}`, "Idempotency-Key": key },
            body: JSON.stringify({
              agentAddress: agent.agentAddress,
              serviceUrl: seller,
              maxAmount: "0.01",
              intent: `chaos ${i}`,
            }),
            signal: AbortSignal.timeout(120_000),
          });
          const body = (await res.json().catch(() => null)) as { retryable?: boolean } | null;
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          if (res.status === 409) {
            conflictsAt.push(Date.now());
            const said = (body as { message?: unknown } | null)?.message;
            const m = (typeof said === "string" ? said : "").slice(0, 90);
            conflicts.set(m, (conflicts.get(m) ?? 0) + 1);
            lastConflict.set(key, typeof said === "string" ? said : "");
          }
          // Final unless it says to retry: a 409 (another payment in flight), a 429, a 503 (a dependency down).
          if (!RETRY.has(res.status) && body?.retryable !== true) {
            results.push({
              index: i,
              agent: agent.agentAddress,
              key,
              status: res.status,
              body,
              tried,
              ms: Date.now() - first,
              conflictsAt,
            });
            return;
          }
        } catch {
          statuses.connection = (statuses.connection ?? 0) + 1; // the instance died under it
        }
        await sleep(Math.min(5_000, 200 * 2 ** Math.min(attempt, 5)));
      }
      results.push({ index: i, agent: agent.agentAddress, key, status: 0, body: null, tried, ms: Date.now() - first, conflictsAt });
    };
    const storm = Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (!stopping) await pay(next++);
      }),
    );

    /** One fault, undone after its duration; faults may overlap. */
    const strike = async (): Promise<void> => {
      const kind = Math.random();
      if (kind < 0.5) {
        const victims = live();
        if (victims.length < 2) return; // one instance always serves
        const victim = victims[Math.floor(Math.random() * victims.length)];
        const down = rand(1_000, 8_000);
        const newId = Math.random() < 0.5;
        told(`${stamp(started)} SIGKILL ${victim.name}, back in ${(down / 1000).toFixed(1)} s${newId ? " under a new INSTANCE_ID" : ""}`);
        await cluster.kill(victim);
        await sleep(down);
        const name = newId ? `${victim.name.replace(/-r\d+$/, "")}-r${cluster.instances.length}` : victim.name;
        // As an orchestrator's restart policy does: an instance that fails to start (the store is down at that moment,
        // and start-up fails fast) is started again a little later.
        let back: Instance | null = null;
        while (!back) {
          back = await cluster.restart(victim, name).catch((err: unknown) => {
            told(`${stamp(started)} ${name} failed to start (${String(err).split("\n").at(-2) ?? ""}); again in 2 s`);
            return null;
          });
          if (!back) await sleep(2_000);
        }
        told(`${stamp(started)} ${back.name} up again`);
        return;
      }
      const which = kind < 0.75 ? "chain" : "store";
      const gate = which === "chain" ? chainGate : storeGate;
      if (Math.random() < 0.5) {
        const down = rand(2_000, 10_000);
        told(`${stamp(started)} ${which} dies for ${(down / 1000).toFixed(1)} s`);
        await gate.close();
        await sleep(down);
        await gate.open();
      } else {
        const down = rand(2_000, 15_000);
        told(`${stamp(started)} ${which} hangs (SIGSTOP) for ${(down / 1000).toFixed(1)} s`);
        cluster.signal(which, "SIGSTOP");
        await sleep(down);
        cluster.signal(which, "SIGCONT");
      }
    };
    const told = (line: string) => {
      faults.push(line);
      console.log(line);
    };
    const striking: Promise<void>[] = [];
    while (Date.now() - started < SECONDS * 1000) {
      await sleep(rand(0.3, 1.7) * FAULT_EVERY_MS);
      if (Date.now() - started >= SECONDS * 1000) break;
      striking.push(strike().catch((err: unknown) => told(`fault failed: ${String(err)}`)));
    }
    stopping = true;
    console.log(`${stamp(started)} faults stop; waiting for the payments in flight`);
    await Promise.all(striking);
    await chainGate.open();
    await storeGate.open();
    await storm;
    // The last instance may have died with payments in flight: heartbeats pass them on within seconds.
    await sleep(10_000);
    const seconds = (Date.now() - started) / 1000;
    console.log(`${faults.length} fault events`);

    const report = await checkCluster(cluster, agents, results, { dailyBudget: 100_000n, funded });
    const lost = results.filter((r) => r.status === 0).length;
    const longest = Math.max(0, ...results.map((r) => r.ms));
    const fiveXX = Object.entries(statuses).filter(([s]) => Number(s) >= 500);
    console.log(`${results.length} payments in ${seconds.toFixed(0)} s; final answers ${JSON.stringify(report.answers)}`);
    console.log(`every answer seen, retries included: ${JSON.stringify(statuses)}`);
    console.log(`ledger ${JSON.stringify(report.ledgerByStatus)}; USDC moved ${Number(report.usdcMoved) / 1e6}`);
    console.log(
      `5xx answers (before a retry got the final one): ${fiveXX.length ? fiveXX.map(([s, n]) => `${s}: ${n}`).join(", ") : "none"}`,
    );
    console.log(`longest wait for a final answer: ${(longest / 1000).toFixed(1)} s`);
    for (const [m, n] of conflicts) console.log(`  409 x${n}: ${m}`);
    const checks: [string, boolean][] = [
      [`budget overshoots: ${report.overshoots}`, report.overshoots === 0],
      [`double payments: ${report.doublePayments}`, report.doublePayments === 0],
      [`lost (no final answer in 10 minutes): ${lost}`, lost === 0],
      [`stuck in flight: ${report.stuck}`, report.stuck === 0],
      [`500 internal errors: ${statuses[500] ?? 0}`, (statuses[500] ?? 0) === 0],
    ];
    if (lost)
      await explainLost(
        cluster,
        results.filter((r) => r.status === 0),
        lastConflict,
      );
    for (const [line, ok] of checks) console.log(`${ok ? "ok  " : "FAIL"} ${line}`);
    if (checks.some(([, ok]) => !ok)) process.exitCode = 1;
  } finally {
    stopping = true;
    cluster.signal("chain", "SIGCONT");
    cluster.signal("store", "SIGCONT");
    await chainGate.open().catch(() => undefined);
    await storeGate.open().catch(() => undefined);
    await cluster.close();
    await chainGate.close();
    await storeGate.close();
  }
}

/** For each key left without a final answer: the payment its last 409 named, its agent's lock and the heartbeats. */
async function explainLost(cluster: Cluster, lost: PaymentResult[], lastConflict: Map<string, string>): Promise<void> {
  const store = await connectStore(cluster.mongoUri, cluster.database);
  const fields = ["phase", "status", "instanceId", "leaseUntil", "paymentId", "authorizeTxHash", "authorizeBlock", "createdAt"] as const;
  try {
    const beats = await store.collection("heartbeats").find({}).toArray();
    console.log(`heartbeats: ${JSON.stringify(beats.map(({ _id, ...b }) => b))}`);
    for (const r of lost) {
      const txnId = /\((txn_[^)]+)\)/.exec(lastConflict.get(r.key) ?? "")?.[1];
      const doc = txnId ? await store.payments.findOne({ txnId }) : null;
      const lock = await store.collection("leases").findOne({ name: `agent:${r.agent.toLowerCase()}` });
      const inFlight = await store.payments.countDocuments({ agentAddress: r.agent, phase: { $nin: ["done", "quoted"] } });
      const named = doc ? Object.fromEntries(fields.map((k) => [k, doc[k]])) : null;
      console.log(
        `  lost ${r.key} (agent ${r.agent}, ${r.tried.length} tries, last on ${r.tried.at(-1) ?? "none"}): behind ${txnId ?? "?"} ${JSON.stringify(named)}; ` +
          `lock ${JSON.stringify(lock)}; ${inFlight} of its payments in flight now`,
      );
    }
  } finally {
    await store.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
