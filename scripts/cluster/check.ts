/**
 * What a cluster run must show, read from the chain, the shared database and every live instance's API: no budget
 * overshoot (what left each agent wallet, and the policy's spentToday, at most its daily budget), no double payment
 * (one settlement per approved ledger entry, at most one payment per Idempotency-Key), nothing stuck in flight, and
 * the same complete ledger on every live instance.
 */
import { JsonRpcProvider } from "ethers";
import { connectStore } from "../../src/store";
import { bind } from "../../src/chain/contracts";
import type { Cluster } from "./cluster";
import type { ClusterAgent, PaymentResult } from "./client";

export interface ClusterReport {
  requests: number;
  answers: Record<string, number>;
  /** Requests without a final answer (approved 200, blocked 422 or failed 502, or 504 after the seller timed out). */
  unresolved: number;
  ledgerEntries: number;
  ledgerByStatus: Record<string, number>;
  /** Ledger entries still between authorise and settle. */
  stuck: number;
  /** Agents whose on-chain spend went past their daily budget. */
  overshoots: number;
  /** Settlements beyond the approved entries, plus keys with more than one payment. */
  doublePayments: number;
  /** Live instances whose ledger differs from the store's. */
  incompleteLedgers: string[];
  /** Entries whose chain events the indexer has confirmed. */
  confirmed: number;
  /** Payments finished by an instance other than the one that began them (a dead one's, taken over). */
  takenOver: number;
  usdcMoved: bigint;
}

export async function checkCluster(
  cluster: Cluster,
  agents: ClusterAgent[],
  results: PaymentResult[],
  budget: { dailyBudget: bigint; funded: bigint },
): Promise<ClusterReport> {
  const store = await connectStore(cluster.mongoUri, cluster.database);
  const provider = new JsonRpcProvider(cluster.chain.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  try {
    const answers: Record<string, number> = {};
    for (const r of results) answers[r.status] = (answers[r.status] ?? 0) + 1;
    // 504: the seller timed out after the payment left; the chain decided it (released: failed, nothing paid).
    const unresolved = results.filter((r) => ![200, 422, 502, 504].includes(r.status)).length;
    const docs = await store.payments.find({ agentAddress: { $in: agents.map((a) => a.agentAddress) } }).toArray();
    const ledgerByStatus: Record<string, number> = {};
    for (const d of docs) ledgerByStatus[d.status] = (ledgerByStatus[d.status] ?? 0) + 1;
    const stuck = docs.filter((d) => d.phase !== "done" && d.phase !== "quoted").length;

    const usdc = bind("Usdc", cluster.chain.addresses.usdc, provider);
    let overshoots = 0;
    let doublePayments = 0;
    let usdcMoved = 0n;
    for (const a of agents) {
      const mine = docs.filter((d) => d.agentAddress === a.agentAddress);
      const approved = mine.filter((d) => d.status === "approved");
      const approvedSum = approved.reduce((s, d) => s + BigInt(d.amount), 0n);
      const balance = await usdc.balanceOf(a.agentAddress);
      const spent = await bind("SpendPolicy", a.agentAddress, provider).spentToday();
      const moved = budget.funded - balance;
      usdcMoved += moved;
      if (moved > budget.dailyBudget || spent > budget.dailyBudget) overshoots++;
      const settlements = await usdc.queryFilter(usdc.filters.AuthorizationUsed(a.agentAddress), cluster.chain.deployBlock);
      // Every settlement is an approved entry, and every approved entry's amount is what left the wallet.
      if (settlements.length > approved.length || moved !== approvedSum)
        doublePayments += Math.max(1, settlements.length - approved.length);
      // Two payments under one Idempotency-Key that each moved (or may yet move) money. A run that died before its
      // payment was committed to the key left an entry recovery closed as failed with nothing paid; a transient
      // answer then freed the key and its retry ran the payment: two entries, one payment.
      const perKey = new Map<string, number>();
      for (const d of mine) {
        if (!d.idempotencyScope || d.status === "failed" || d.status === "blocked") continue;
        perKey.set(d.idempotencyScope, (perKey.get(d.idempotencyScope) ?? 0) + 1);
      }
      doublePayments += [...perKey.values()].filter((n) => n > 1).length;
    }

    const incompleteLedgers: string[] = [];
    for (const inst of cluster.instances.filter((i) => i.alive)) {
      for (const a of agents) {
        const res = await fetch(`${inst.url}/ledger?address=${a.agentAddress}&limit=1`, {
          headers: { Authorization: `Bearer ${a.apiKey}` },
        });
        const body = (await res.json()) as { total?: number };
        const expected = docs.filter((d) => d.agentAddress === a.agentAddress).length;
        if (body.total !== expected) {
          incompleteLedgers.push(inst.name);
          break;
        }
      }
    }
    const requested = new Map(results.map((r) => [r.body?.transactionId, r.tried[0]]));
    return {
      requests: results.length,
      answers,
      unresolved,
      ledgerEntries: docs.length,
      ledgerByStatus,
      stuck,
      overshoots,
      doublePayments,
      incompleteLedgers,
      confirmed: docs.filter((d) => d.onchain?.confirmed).length,
      takenOver: docs.filter((d) => d.instanceId && requested.get(d.txnId) && requested.get(d.txnId) !== d.instanceId).length,
      usdcMoved,
    };
  } finally {
    provider.destroy();
    await store.close();
  }
}
