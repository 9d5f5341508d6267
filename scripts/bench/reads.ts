/**
 * Read paths of the bench: an MCP tool call's p50 (get_limits reads the chain, list_transactions only the store;
 * target under 2 ms for reads with no chain call) and GET /ledger's p95 with 100,000 entries in the store (target
 * under 20 ms), on the embedded store or on MONGODB_URI, with the index each read relies on: CongoDB's hash and range
 * indexes (src/dev/congoIndexes.ts) on the embedded store, MongoDB's own query plan (explain) otherwise.
 * Each call's key lookup is the one the instance remembers for API_KEY_CACHE_MS (read again once a second by
 * default); `API_KEY_CACHE_MS=0 npm run bench` reads the key on every call.
 */
import { randomBytes } from "node:crypto";
import type { Stack } from "../../test/helpers/stack";
import { agentHeaders, callTool, mcpClient } from "../../test/mcp/client";
import { mcpPoster } from "./mcpPost";
import type { Document, Filter, Sort } from "mongodb";
import type { EmbeddedMongo } from "../../src/dev/embeddedStore";
import type { PaymentDoc } from "../../src/store/documents";

const LEDGER_ENTRIES = Number(process.env.BENCH_LEDGER_ENTRIES ?? 100_000);

function quantile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

async function time(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}

/** The indexes a query plan uses (IXSCAN stages), or COLLSCAN. */
function planIndexes(plan: unknown): string[] {
  if (typeof plan !== "object" || plan === null) return [];
  const node = plan as Record<string, unknown>;
  const own = node.stage === "COLLSCAN" ? ["COLLSCAN"] : typeof node.indexName === "string" ? [node.indexName] : [];
  return [...own, ...Object.values(node).flatMap((v) => (Array.isArray(v) ? v.flatMap(planIndexes) : planIndexes(v)))];
}

/** How the store answers a filter (a page of it, with `sort`): the index it relies on, and how many documents it looks at. */
async function indexOf(
  s: Stack,
  embedded: EmbeddedMongo | undefined,
  collection: string,
  filter: Filter<Document>,
  sort?: Sort,
): Promise<string> {
  if (embedded) {
    const e = embedded.indexes.explain(s.svc.store.db.databaseName, collection, filter, sort ? { sort, limit: 50 } : undefined);
    return e.index ? `${e.index}, ${e.candidates} of ${e.collection} documents` : `scan of ${e.collection} documents`;
  }
  let cursor = s.svc.store.collection(collection).find(filter);
  if (sort) cursor = cursor.sort(sort);
  const plan = (await cursor.limit(50).explain("queryPlanner")) as { queryPlanner?: { winningPlan?: unknown } };
  return [...new Set(planIndexes(plan.queryPlanner?.winningPlan))].join(", ") || "unknown";
}

/** How the store counts a filter: from an index alone (the embedded store's buckets, MongoDB's COUNT_SCAN) or not. */
async function countOf(s: Stack, embedded: EmbeddedMongo | undefined, collection: string, filter: Filter<Document>): Promise<string> {
  if (embedded) {
    const before = embedded.indexes.stats.counted;
    await s.svc.store.collection(collection).countDocuments(filter);
    return embedded.indexes.stats.counted > before ? "counted from the index" : "counted by filtering";
  }
  const plan = await s.svc.store.db.command({
    explain: { aggregate: collection, pipeline: [{ $match: filter }, { $group: { _id: 1, n: { $sum: 1 } } }], cursor: {} },
    verbosity: "queryPlanner",
  });
  const text = JSON.stringify(plan);
  return text.includes("COUNT_SCAN")
    ? "COUNT_SCAN"
    : text.includes("FETCH") || text.includes("COLLSCAN")
      ? "fetches documents"
      : "index only";
}

/** `embedded`: the embedded store the service runs on, when the bench started it (its own otherwise). */
export async function benchReads(s: Stack, agent: { agentAddress: string; apiKey: string }, embedded = s.svc.embeddedMongo): Promise<void> {
  // Measured as an agent's client sends it (a plain JSON-RPC POST on a kept-alive connection); the SDK Client beside it.
  const post = mcpPoster(s.url, agentHeaders(agent));
  const mcp = await mcpClient(s.url, agentHeaders(agent));
  for (let i = 0; i < 50; i++) {
    await post.call("get_limits");
    await post.call("list_transactions", { limit: 10 });
    await post.list();
  }
  await callTool(mcp, "get_limits");
  // Ten rounds of 40 calls of each, interleaved: whatever else the process does meanwhile (a collection, a timer)
  // falls on every kind of call alike, not on one kind's whole sample.
  const [limits, txs, listed, sdkLimits, sdkTxs]: number[][] = [[], [], [], [], []];
  for (let round = 0; round < 10; round++) {
    limits.push(...(await time(40, () => post.call("get_limits"))));
    txs.push(...(await time(40, () => post.call("list_transactions", { limit: 10 }))));
    listed.push(...(await time(40, () => post.list())));
    sdkLimits.push(...(await time(40, () => callTool(mcp, "get_limits"))));
    sdkTxs.push(...(await time(40, () => callTool(mcp, "list_transactions", { limit: 10 }))));
  }
  const p50p95 = (samples: number[]) => `${quantile(samples, 0.5).toFixed(2)} ms (p95 ${quantile(samples, 0.95).toFixed(2)})`;
  console.log(
    `\nMCP tool call p50 (JSON-RPC POST, kept alive): get_limits ${p50p95(limits)} (one chain read), list_transactions ${p50p95(txs)} (store only; target p50 < 2 ms); tools/list ${p50p95(listed)}`,
  );
  console.log(
    `MCP tool call p50 through the SDK Client: get_limits ${quantile(sdkLimits, 0.5).toFixed(2)} ms, list_transactions ${quantile(sdkTxs, 0.5).toFixed(2)} ms`,
  );

  // 100,000 ledger entries of another agent (with its own key) and owner, then the bench agent's ledger and that
  // agent's, page 1.
  const big = await s.genesis();
  const other = big.agentAddress;
  const owner = `0x${randomBytes(20).toString("hex")}`;
  const t0 = Date.now();
  for (let i = 0; i < LEDGER_ENTRIES; i += 5_000) {
    const batch: PaymentDoc[] = Array.from({ length: Math.min(5_000, LEDGER_ENTRIES - i) }, (_, j) => {
      const at = new Date(Date.now() - (i + j) * 1000);
      return {
        txnId: `txn_${randomBytes(12).toString("hex")}`,
        agentAddress: other,
        ownerAddress: owner,
        policyAddress: other,
        merchant: "bench.example",
        serviceUrl: "https://bench.example/r",
        currency: "USDC",
        intent: "bench",
        approvalId: null,
        amount: "10000",
        status: "approved",
        phase: "done",
        reason: null,
        paymentId: null,
        txHash: null,
        authorizeTxHash: null,
        releaseTxHash: null,
        payTo: null,
        validBefore: null,
        createdAt: at,
        updatedAt: at,
        settledAt: at,
        onchain: { confirmed: true, blockNumber: 1 },
      };
    });
    await s.svc.store.payments.insertMany(batch);
  }
  const total = await s.svc.store.payments.countDocuments({});
  console.log(`store: ${total} ledger entries (inserted ${LEDGER_ENTRIES} in ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  const ownLedger = await time(100, () => s.api("GET", `/ledger?address=${agent.agentAddress}&limit=50`, { key: agent.apiKey }));
  console.log(
    `GET /ledger (the bench agent's entries among ${total}): p50 ${quantile(ownLedger, 0.5).toFixed(1)} ms, p95 ${quantile(ownLedger, 0.95).toFixed(1)} ms (target p95 < 20 ms)`,
  );
  const txsAfter: number[] = [];
  for (let round = 0; round < 10; round++) {
    txsAfter.push(...(await time(40, () => post.call("list_transactions", { limit: 10 }))));
    await time(40, () => post.list());
  }
  console.log(`MCP list_transactions p50 with ${total} entries in the store: ${quantile(txsAfter, 0.5).toFixed(2)} ms (target < 2 ms)`);
  await mcp.close();
  post.close();
  const store = s.svc.store;
  const bigLedger = await time(50, () =>
    Promise.all([
      store.payments.find({ agentAddress: other }).sort({ createdAt: -1, _id: -1 }).limit(50).toArray(),
      store.payments.countDocuments({ agentAddress: other }),
    ]),
  );
  console.log(
    `the ledger query of an agent with ${LEDGER_ENTRIES} entries (page 1 and total): p50 ${quantile(bigLedger, 0.5).toFixed(1)} ms, p95 ${quantile(bigLedger, 0.95).toFixed(1)} ms`,
  );
  for (const [what, query] of [
    ["page 1", "limit=50"],
    ["page 1000", "limit=50&offset=49950"],
    ["status approved, page 1", "limit=50&status=approved"],
  ]) {
    let shown = -1;
    const samples = await time(50, async () => {
      const res = await s.api("GET", `/ledger?${query}`, { key: big.apiKey });
      shown = (res.body as { total?: number }).total ?? -1;
    });
    console.log(
      `GET /ledger of that agent (its own key, ${what}, total ${shown}): p50 ${quantile(samples, 0.5).toFixed(1)} ms, p95 ${quantile(samples, 0.95).toFixed(1)} ms (target p95 < 20 ms)`,
    );
  }
  const newest: Sort = { createdAt: -1, _id: -1 };
  const ownerOf = (await store.agents.findOne({ address: agent.agentAddress }))?.ownerAddress;
  const ledgers: [string, Filter<Document>][] = [
    ["GET /ledger, list_transactions (an agent)", { agentAddress: agent.agentAddress }],
    ["GET /ledger (an owner)", { ownerAddress: ownerOf }],
    ["GET /ledger?address= (an owner)", { ownerAddress: ownerOf, agentAddress: agent.agentAddress }],
    ["GET /ledger (the agent with 100,000 entries)", { agentAddress: other }],
    ["GET /ledger?status=approved (the agent with 100,000 entries)", { agentAddress: other, status: "approved" }],
  ];
  console.log(`indexes GET /ledger relies on, page 1 and total (${embedded ? "embedded CongoDB" : "MongoDB explain"}):`);
  for (const [what, filter] of ledgers)
    console.log(
      `  ${what}: payments ${await indexOf(s, embedded, "payments", filter, newest)}; ${await countOf(s, embedded, "payments", filter)}`,
    );
  const reads: [string, string, Filter<Document>][] = [
    ["API key of every request", "apiKeys", { hash: "0".repeat(64) }],
    ["agent of every request", "agents", { address: agent.agentAddress }],
    [
      "indexer, every run: ledger entries changed since its last run",
      "payments",
      { "onchain.confirmed": { $ne: true }, updatedAt: { $gte: new Date(Date.now() - 60_000) } },
    ],
  ];
  console.log(`indexes the reads rely on (${embedded ? "embedded CongoDB, src/dev/congoIndexes.ts" : "MongoDB explain"}):`);
  for (const [what, collection, filter] of reads) console.log(`  ${what}: ${collection} ${await indexOf(s, embedded, collection, filter)}`);
}
