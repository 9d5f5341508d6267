/**
 * CongoDB's engines with mingo's options built once (src/dev/congoMingo.ts) against mingo as CongoDB ships it (a
 * new Query or Aggregator with its own copy of the operators each time): the same answers for every filter and
 * pipeline, also after pipelines whose stages add operators to the context they run with.
 */
import { expect } from "chai";
import { createRequire } from "node:module";
import { ObjectId } from "mongodb";
import { installSharedMingoOptions, type CongoEngines } from "../../src/dev/congoMingo";

interface ShippedMingo {
  Query: new (filter: unknown) => { test(doc: unknown): boolean };
  Aggregator: new (pipeline: unknown[], options: object) => { run(docs: unknown[]): unknown[] };
}

// mingo's own entry point, from where CongoDB resolves it.
const shipped = createRequire(require.resolve("@push.rocks/smartmongo/package.json"))("mingo") as ShippedMingo;

const at = (min: number) => new Date(Date.UTC(2026, 10, 24) + min * 60_000);
const DOCS = Array.from({ length: 40 }, (_, i) => ({
  _id: new ObjectId(),
  txnId: `txn_${i}`,
  agentAddress: `0xa${i % 4}`,
  status: ["approved", "blocked", "pending", "failed"][i % 4],
  phase: i % 5 === 0 ? "authorizing" : "done",
  amount: String(10_000 * (i % 7)),
  createdAt: at(i % 9),
  leaseUntil: i % 3 === 0 ? at(i) : undefined,
  onchain: i % 2 ? { confirmed: i % 4 === 1, blockNumber: i } : null,
  tags: i % 6 ? ["a", `t${i % 3}`] : [],
  n: i % 11,
}));

const FILTERS: Record<string, unknown>[] = [
  { txnId: "txn_7" },
  { hash: "nothing" },
  { agentAddress: "0xa1", status: "approved" },
  { status: { $in: ["pending", "failed"] }, phase: { $ne: "done" } },
  { leaseUntil: { $exists: false } },
  { $or: [{ leaseUntil: { $lt: at(12) } }, { leaseUntil: { $exists: false } }], phase: { $in: ["authorizing"] } },
  { createdAt: { $gte: at(3), $lt: at(6) } },
  { "onchain.confirmed": true },
  { onchain: null },
  { tags: "t1" },
  { tags: { $size: 0 } },
  { tags: { $elemMatch: { $eq: "t2" } } },
  { txnId: { $regex: "^txn_1" } },
  { $and: [{ n: { $gt: 2 } }, { n: { $not: { $gte: 8 } } }] },
  { $nor: [{ status: "approved" }, { amount: { $type: "number" } }] },
  { $expr: { $gt: ["$n", 5] } },
];

const PIPELINES: unknown[][] = [
  [{ $match: { agentAddress: "0xa2" } }, { $group: { _id: 1, n: { $sum: 1 } } }],
  [{ $match: { status: { $in: ["approved", "pending"] } } }, { $sort: { createdAt: -1, txnId: 1 } }, { $skip: 2 }, { $limit: 5 }],
  [{ $group: { _id: "$status", total: { $sum: { $toLong: "$amount" } }, last: { $max: "$createdAt" } } }, { $sort: { _id: 1 } }],
  [{ $project: { txnId: 1, big: { $gte: ["$n", 6] }, _id: 0 } }],
  [{ $sort: { n: 1, txnId: 1 } }, { $fill: { output: { leaseUntil: { value: at(0) } } } }],
  [{ $setWindowFields: { partitionBy: "$agentAddress", sortBy: { n: 1 }, output: { running: { $sum: "$n" } } } }, { $sort: { txnId: 1 } }],
  [{ $match: { $expr: { $eq: [{ $mod: ["$n", 3] }, 0] } } }, { $count: "c" }],
];

describe("embedded store: mingo options built once (congoMingo)", () => {
  let engines: CongoEngines;

  before(async () => {
    const { congodb } = await import("@push.rocks/smartmongo");
    engines = congodb;
    // Fails when the mingo CongoDB resolves no longer has what the shared options need: the saving would be gone.
    expect(installSharedMingoOptions(engines)).to.equal(true);
  });

  it("filters, matches and finds one exactly as a new mingo Query does", () => {
    for (const filter of FILTERS) {
      const q = new shipped.Query(filter);
      const want = DOCS.filter((d) => q.test(d));
      expect(engines.QueryEngine.filter(DOCS, filter), JSON.stringify(filter)).to.deep.equal(want);
      expect(engines.QueryEngine.findOne(DOCS, filter), JSON.stringify(filter)).to.deep.equal(want[0] ?? null);
      for (const d of DOCS.slice(0, 12)) expect(engines.QueryEngine.matches(d, filter)).to.equal(q.test(d));
    }
    expect(engines.QueryEngine.filter(DOCS, {})).to.equal(DOCS);
    expect(engines.QueryEngine.findOne([], { txnId: "txn_1" })).to.equal(null);
  });

  it("aggregates exactly as a new mingo Aggregator does, before and after stages that add operators", () => {
    const expected = PIPELINES.map((p) => new shipped.Aggregator(p, { collation: undefined }).run(DOCS));
    // Twice over: the second round runs after $fill and $setWindowFields had the shared context.
    for (let round = 0; round < 2; round++) {
      PIPELINES.forEach((p, i) => expect(engines.AggregationEngine.aggregate(DOCS, p), JSON.stringify(p)).to.deep.equal(expected[i]));
      for (const filter of FILTERS) {
        const q = new shipped.Query(filter);
        expect(engines.QueryEngine.filter(DOCS, filter)).to.deep.equal(DOCS.filter((d) => q.test(d)));
      }
    }
    expect(engines.AggregationEngine.aggregate(DOCS, [])).to.equal(DOCS);
  });

  it("leaves an aggregation with a collation to CongoDB's own path", () => {
    const pipeline = [{ $match: { status: "APPROVED" } }, { $count: "c" }];
    const collation = { locale: "en", strength: 2 };
    const want = new shipped.Aggregator(pipeline, { collation }).run(DOCS);
    expect(engines.AggregationEngine.aggregate(DOCS, pipeline, { collation })).to.deep.equal(want);
  });

  it("answers the same on a second install (once per process)", () => {
    expect(installSharedMingoOptions(engines)).to.equal(true);
  });
});
