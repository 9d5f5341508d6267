/**
 * Watches a killed instance's payments in flight from the shared database: which they were at the kill, and how long
 * after it each one became final on a survivor (and which instance finished it). `npm run cluster -- --kill` prints it;
 * the target is 15 s for each (issue 27).
 */
import { connectStore } from "../../src/store";
import type { Cluster } from "./cluster";

const IN_FLIGHT = ["authorizing", "authorized"] as const;

export interface Takeover {
  txnId: string;
  /** Its phase when the instance was killed. */
  phase: string;
  /** ms from the kill to its final state; null when it was not final by the watch's end. */
  finalMs: number | null;
  status: string | null;
  /** The instance that wrote its final state. */
  finishedBy: string | null;
}

/** Starts watching right after `victim` was killed; `done()` stops and answers what was seen. */
export async function watchTakeover(
  cluster: Cluster,
  victim: string,
  killedAt: number,
  maxMs = 120_000,
): Promise<{ payments: Takeover[]; done(): Promise<Takeover[]>; allFinal: Promise<number | null> }> {
  const store = await connectStore(cluster.mongoUri, cluster.database);
  const seen = await store.payments
    .find({ instanceId: victim, phase: { $in: [...IN_FLIGHT] } }, { projection: { txnId: 1, phase: 1 } })
    .toArray();
  const payments: Takeover[] = seen.map((d) => ({ txnId: d.txnId, phase: d.phase, finalMs: null, status: null, finishedBy: null }));
  let stopped = false;
  const watching = (async (): Promise<number | null> => {
    for (;;) {
      const open = payments.filter((p) => p.finalMs === null);
      if (!open.length) return Math.max(0, ...payments.map((p) => p.finalMs ?? 0));
      if (stopped || Date.now() - killedAt > maxMs) return null;
      const docs = await store.payments.find({ txnId: { $in: open.map((p) => p.txnId) }, phase: "done" }).toArray();
      for (const d of docs) {
        const p = payments.find((x) => x.txnId === d.txnId)!;
        p.finalMs = Date.now() - killedAt;
        p.status = d.status;
        p.finishedBy = d.instanceId ?? null;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    payments,
    allFinal: watching,
    done: async () => {
      stopped = true;
      await watching.catch(() => null);
      await store.close();
      return payments;
    },
  };
}
