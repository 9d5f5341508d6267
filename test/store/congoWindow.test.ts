/**
 * The embedded store's sorted windows and index counts (src/dev/congoWindow.ts) against CongoDB as shipped: a
 * paginated list (equality on an index's prefix, sorted on its next field, skip and limit) and its total, on a
 * patched server and on a plain one that scans, over the real wire protocol. Same answers, in every direction, past
 * the end, with ties, after updates and deletes, and with data or filters the window must not be used for.
 */
import { expect } from "chai";
import { ObjectId, type Collection, type Document, type Filter, type Sort } from "mongodb";
import type { EmbeddedMongo } from "../../src/dev/embeddedStore";
import { startCongoPair, type CongoPair } from "../helpers/congoPair";

const DB = "window";
const BIG = "0xbig";
const SMALL = "0xsmall";
const T0 = Date.UTC(2026, 0, 1);
const at = (minute: number) => new Date(T0 + minute * 60_000);

/** 2,000 entries of one agent and 40 of another; 300 distinct instants, so pages meet ties on `at` everywhere. */
function makeDocs(): Document[] {
  return Array.from({ length: 2_040 }, (_, i) => ({
    _id: new ObjectId(),
    k: `k${i}`,
    a: i % 51 === 50 ? SMALL : BIG,
    s: ["approved", "blocked", "pending"][i % 3],
    at: at((i * 7919) % 300),
    n: i,
  }));
}

const SORTS: Sort[] = [{ at: -1, _id: -1 }, { at: 1, _id: 1 }, { at: -1 }, { at: 1, n: -1 }];
const PAGES: [number, number][] = [
  [0, 1],
  [0, 50],
  [3, 7],
  [997, 50],
  [1_990, 50],
  [50_000, 50],
];

/** Filters the window serves (a prefix equality, with or without a range on `at`). */
const WINDOWED: Filter<Document>[] = [
  { a: BIG },
  { a: { $eq: BIG } },
  { a: SMALL },
  { a: "0xnobody" },
  { a: BIG, at: { $gte: at(100) } },
  { a: BIG, at: { $gt: at(100), $lte: at(250) } },
  { a: BIG, at: { $lt: at(0) } },
  // A number range never matches a date: an empty window.
  { a: BIG, at: { $gte: 5 } },
  { s: "pending" },
];

/** Filters it must not serve: an extra field beside the prefix, a $in, an $or, no prefix, an operator that is no range. */
const FALLBACK: Filter<Document>[] = [
  { a: BIG, s: "approved" },
  { a: { $in: [BIG, SMALL] } },
  { $or: [{ a: BIG }, { a: SMALL }] },
  { at: { $gte: at(200) } },
  { a: BIG, at: { $ne: at(3) } },
];

describe("embedded store sorted windows and index counts (CongoDB patch)", () => {
  let patched: EmbeddedMongo;
  let pair: CongoPair;
  let p: Collection;
  let q: Collection;

  before(async () => {
    pair = await startCongoPair(DB);
    ({ patched, p, q } = pair);
    for (const c of [p, q]) {
      // As the ledger declares them: the trailing _id makes MongoDB's index give the whole sort.
      await c.createIndex({ a: 1, at: -1, _id: -1 });
      await c.createIndex({ s: 1, at: -1 });
      await c.createIndex({ k: 1 }, { unique: true });
    }
    const docs = makeDocs();
    await p.insertMany(docs.map((d) => ({ ...d })));
    await q.insertMany(docs.map((d) => ({ ...d })));
  });
  after(async () => {
    await pair?.close();
  });

  /** Every page of every filter and sort, its count (whole, skipped, limited), the count command and the raw pipeline. */
  async function expectSameAnswers(label: string, filters: Filter<Document>[]): Promise<void> {
    for (const filter of filters) {
      for (const sort of SORTS) {
        for (const [skip, limit] of PAGES) {
          const [mine, scan] = await Promise.all([p, q].map((c) => c.find(filter).sort(sort).skip(skip).limit(limit).toArray()));
          expect(mine, `${label}: ${JSON.stringify({ filter, sort, skip, limit })}`).to.deep.equal(scan);
        }
      }
      const counts = await Promise.all(
        [p, q].map(async (c) => ({
          all: await c.countDocuments(filter),
          skipped: await c.countDocuments(filter, { skip: 30 }),
          limited: await c.countDocuments(filter, { skip: 10, limit: 25 }),
          past: await c.countDocuments(filter, { skip: 50_000 }),
          command: (await c.db.command({ count: c.collectionName, query: filter, skip: 5, limit: 40 })).n as unknown,
          negative: (await c.db.command({ count: c.collectionName, query: filter, skip: -2, limit: -3 })).n as unknown,
          raw: await c.aggregate([{ $match: filter }, { $group: { _id: 1, n: { $sum: 1 } } }]).toArray(),
        })),
      );
      expect(counts[0], `${label} counts: ${JSON.stringify(filter)}`).to.deep.equal(counts[1]);
    }
  }

  it("answers pages and totals like a scan, from a window of skip+limit entries and their ties", async () => {
    const before = { ...patched.indexes.stats };
    await expectSameAnswers("initial", WINDOWED);
    const pages = WINDOWED.length * SORTS.length * PAGES.length;
    expect(patched.indexes.stats.windowed - before.windowed).to.equal(pages);
    // The 7 counts of each of the 5 plain-equality filters (CongoDB counts those with a range itself).
    expect(patched.indexes.stats.counted - before.counted).to.equal(5 * 7);
    const page1 = patched.indexes.explain(DB, "t", { a: BIG }, { sort: { at: -1, _id: -1 }, limit: 50 });
    expect(page1.index).to.equal("{ a: 1, at: -1, _id: -1 } on a, at (sorted window)");
    // 50 entries, and the rest of the last one's instant (about 7 entries share each).
    expect(page1.candidates).to.be.within(50, 70);
    // A deep page too: the entries before it are counted off, not handed to CongoDB.
    const deep = patched.indexes.explain(DB, "t", { a: BIG }, { sort: { at: 1, _id: 1 }, skip: 997, limit: 50 });
    expect(deep.candidates).to.be.within(50, 80);
  });

  it("falls back to the superset plan for any other shape, with the same answers", async () => {
    const before = { ...patched.indexes.stats };
    await expectSameAnswers("fallback", FALLBACK);
    expect(patched.indexes.stats.windowed).to.equal(before.windowed);
    expect(patched.indexes.stats.counted).to.equal(before.counted);
    expect(patched.indexes.explain(DB, "t", { a: BIG, s: "approved" }, { sort: { at: -1 }, limit: 5 }).index).to.not.match(/window/);
  });

  it("answers like a scan after entries are updated, moved to another agent, deleted and added on a page boundary", async () => {
    const both = async (write: (c: Collection) => Promise<unknown>) => {
      await write(p);
      await write(q);
    };
    await both((c) => c.updateMany({ a: BIG, at: at(299) }, { $set: { at: at(298) } }));
    await both((c) => c.updateMany({ k: { $in: ["k0", "k1", "k2", "k3"] } }, { $set: { a: SMALL } }));
    await both((c) => c.updateMany({ a: SMALL, s: "blocked" }, { $set: { a: BIG, at: at(150) } }));
    await both((c) => c.deleteMany({ a: BIG, at: at(297) }));
    await both((c) => c.deleteOne({ k: "k10" }));
    const boundary = (await p.find({ a: BIG }).sort({ at: -1, _id: -1 }).skip(49).limit(1).toArray())[0].at as Date;
    // The same ids on both servers: _id breaks the ties.
    const ties = Array.from({ length: 5 }, (_, i) => ({ _id: new ObjectId(), k: `tie${i}`, a: BIG, s: "pending", at: boundary, n: -i }));
    await both((c) => c.insertMany(ties.map((d) => ({ ...d }))));
    const before = patched.indexes.stats.windowed;
    await expectSameAnswers("after writes", WINDOWED);
    expect(patched.indexes.stats.windowed).to.be.greaterThan(before);
  });

  it("answers like a scan when an agent's entries hold a missing date, a number or an array, and windows again once they go", async () => {
    const both = async (write: (c: Collection) => Promise<unknown>) => {
      await write(p);
      await write(q);
    };
    const odd: Document[] = [
      { k: "nodate", a: BIG, s: "pending" },
      { k: "numdate", a: BIG, s: "pending", at: 5 },
      { k: "arrayagent", a: [BIG, SMALL], s: "pending", at: at(10) },
    ];
    for (const doc of odd) {
      doc._id = new ObjectId();
      await both((c) => c.insertOne({ ...doc }));
      await expectSameAnswers(`with ${String(doc.k)}`, [{ a: BIG }, { a: BIG, at: { $gte: at(100) } }, { a: SMALL }]);
      await both((c) => c.deleteOne({ k: doc.k as string }));
    }
    const before = patched.indexes.stats.windowed;
    await expectSameAnswers("after removing them", [{ a: BIG }]);
    expect(patched.indexes.stats.windowed - before).to.equal(SORTS.length * PAGES.length);
  });
});
