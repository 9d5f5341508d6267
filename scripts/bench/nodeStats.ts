/**
 * JSON-RPC calls the embedded chain serves, by method, with the time the node spent answering them (measured around
 * the provider's request, so without the HTTP server's share). The chain script counts when CHAIN_RPC_STATS=1 and
 * answers the made-up method `bench_rpcStats` with the counts since the last ask (and forgets them): the throughput
 * bench reads them per approved payment.
 */
export const STATS_METHOD = "bench_rpcStats";

export type RpcStats = Record<string, { calls: number; ms: number }>;

interface Requester {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
}

/** Replaces `provider.request` with one that counts (the Hardhat server calls it for every request it serves). */
export function countCalls(provider: Requester): void {
  const request = provider.request.bind(provider);
  let stats: RpcStats = {};
  provider.request = async (args) => {
    if (args.method === STATS_METHOD) {
      const answer = stats;
      stats = {};
      return answer;
    }
    const t = performance.now();
    try {
      return await request(args);
    } finally {
      const s = (stats[args.method] ??= { calls: 0, ms: 0 });
      s.calls++;
      s.ms += performance.now() - t;
    }
  };
}

/** One line: calls per payment by method, with the node's mean ms per call, busiest first. */
export function formatStats(stats: RpcStats, payments: number): string {
  const rows = Object.entries(stats).sort(([, a], [, b]) => b.ms - a.ms);
  const total = rows.reduce((n, [, s]) => n + s.calls, 0);
  const per = (n: number) => (n / Math.max(1, payments)).toFixed(2);
  return `${per(total)} calls a payment: ${rows.map(([m, s]) => `${m} ${per(s.calls)} (${(s.ms / s.calls).toFixed(2)} ms)`).join(", ")}`;
}
