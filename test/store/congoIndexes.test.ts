/**
 * The embedded store's index layer (src/dev/congoIndexes.ts) against CongoDB as shipped: the same documents and
 * the same operations, over the real wire protocol, on a patched server and on a plain one that scans. Every read
 * must answer exactly as the scan does, after every kind of write, and the indexed reads must really be narrowed.
 */
import { expect } from "chai";
import { MongoClient, ObjectId, type Collection, type Document, type Filter, type Sort } from "mongodb";
import type { EmbeddedMongo } from "../../src/dev/embeddedStore";
import { startCongoPair, type CongoPair } from "../helpers/congoPair";

const DB = "equivalence";
const AS = Array.from({ length: 12 }, (_, i) => `0xa${i}`);
const STATUSES = ["approved", "blocked", "pending", "failed"];

/** A small deterministic generator, so a failure reproduces. */
function rng(seed: number): () => number {
  let t = seed;
  return () => {
    t = (t + 0x6d2b79f5) | 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

function makeDocs(n: number, from: number, rand: () => number): Document[] {
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  return Array.from({ length: n }, (_, j) => {
    const i = from + j;
    const doc: Document = {
      _id: new ObjectId(),
      k: `k${i}`,
      a: pick(AS),
      s: pick(STATUSES),
      // Few distinct instants, so sorts meet many ties.
      at: new Date(Date.UTC(2026, 0, 1) + Math.floor(rand() * 40) * 60_000),
      n: i,
    };
    const shape = rand();
    if (shape < 0.6) doc.b = Math.floor(rand() * 6);
    else if (shape < 0.7) doc.b = String(Math.floor(rand() * 6));
    else if (shape < 0.8) doc.b = [Math.floor(rand() * 6), 9];
    else if (shape < 0.9) doc.b = null;
    if (rand() < 0.5) doc.o = { x: Math.floor(rand() * 4) };
    else if (rand() < 0.3) doc.o = [{ x: 1 }, { x: 2 }];
    return doc;
  });
}

/** Reads whose answers are compared: filters with equality, $in, $or, $and and ranges, sorts, skip and limit. */
function reads(ids: ObjectId[]): { filter: Filter<Document>; sort?: Sort; skip?: number; limit?: number }[] {
  const t = new Date(Date.UTC(2026, 0, 1) + 20 * 60_000);
  const filters: Filter<Document>[] = [
    {},
    { a: AS[1] },
    { a: AS[2], s: "approved" },
    { a: { $in: [AS[3], AS[4], "nobody"] } },
    { a: { $eq: AS[5] }, at: { $gte: t } },
    { a: AS[6], at: { $gte: new Date(t.getTime() - 600_000), $lt: t } },
    { b: 1 },
    { b: "1" },
    { b: { $in: [2, "2"] } },
    { b: 9 },
    { b: null },
    { "o.x": 2 },
    { k: "k7" },
    { k: { $in: ["k1", "k2", "k5000"] } },
    { _id: ids[3] },
    { _id: { $in: [ids[4], ids[5], new ObjectId()] } },
    { $or: [{ a: AS[7] }, { k: "k11" }] },
    { $or: [{ a: AS[8] }, { s: "pending" }] },
    { a: AS[9], $or: [{ s: "blocked" }, { b: { $gte: 3 } }] },
    { $and: [{ a: AS[10] }, { b: 2 }] },
    { s: { $in: ["pending", "failed"] }, at: { $lt: t } },
    { a: { $ne: AS[0] }, s: "failed" },
    { a: AS[11], phase: { $exists: false } },
    { "o.x": { $gte: 2 } },
    { b: { $gt: 2, $lte: 4 } },
    { b: { $gte: 2, $lt: t } },
    { a: AS[1], at: { $lt: new Date(0) } },
    { at: { $gte: t }, $or: [{ s: "approved" }, { a: AS[2] }] },
    { s: "pending", $or: [{ k: "k5" }, { at: { $gt: t } }] },
  ];
  const sorts: (Sort | undefined)[] = [undefined, { at: -1, _id: -1 }, { at: 1 }, { b: 1, n: -1 }];
  const out: { filter: Filter<Document>; sort?: Sort; skip?: number; limit?: number }[] = [];
  filters.forEach((filter, i) => {
    // The whole collection only once: it is the slowest read of the plain server and needs no index.
    if (i > 0) out.push({ filter, sort: sorts[i % sorts.length] });
    out.push({ filter, sort: { at: -1, _id: -1 }, skip: 3, limit: 7 });
    if (i > 0) out.push({ filter, limit: 1 });
  });
  return out;
}

describe("embedded store indexes (CongoDB patch)", () => {
  let patched: EmbeddedMongo;
  let pair: CongoPair;
  let clients: MongoClient[];
  let p: Collection;
  let q: Collection;
  let ids: ObjectId[];
  const rand = rng(13);

  before(async () => {
    pair = await startCongoPair(DB);
    ({ patched, clients, p, q } = pair);
    for (const c of [p, q]) {
      await c.createIndex({ a: 1, at: -1 });
      await c.createIndex({ k: 1 }, { unique: true });
      await c.createIndex({ b: 1 });
      await c.createIndex({ s: 1, at: -1 });
      await c.createIndex({ "o.x": 1 });
    }
    const docs = makeDocs(400, 0, rand);
    ids = docs.map((d) => d._id as ObjectId);
    await p.insertMany(docs.map((d) => ({ ...d })));
    await q.insertMany(docs.map((d) => ({ ...d })));
  });
  after(async () => {
    await pair?.close();
  });

  /** Both servers' answers to every read; upserted documents get server-made ids, shown as "new". */
  async function expectSameAnswers(label: string): Promise<void> {
    const known = new Set(ids.map((id) => id.toHexString()));
    const norm = (docs: Document[]) =>
      docs.map((d) => ({ ...d, _id: d._id instanceof ObjectId && known.has(d._id.toHexString()) ? d._id.toHexString() : "new" }));
    for (const r of reads(ids)) {
      const answers = await Promise.all(
        [p, q].map(async (c) => {
          let cursor = c.find(r.filter);
          if (r.sort) cursor = cursor.sort(r.sort);
          if (r.skip) cursor = cursor.skip(r.skip);
          if (r.limit) cursor = cursor.limit(r.limit);
          return {
            docs: norm(await cursor.toArray()),
            count: await c.countDocuments(r.filter),
            distinct: (await c.distinct("s", r.filter)).sort(),
            groups: await c.aggregate([{ $match: r.filter }, { $group: { _id: "$a", n: { $sum: 1 } } }, { $sort: { _id: 1 } }]).toArray(),
          };
        }),
      );
      expect(answers[0], `${label}: ${JSON.stringify(r)}`).to.deep.equal(answers[1]);
    }
  }

  /** Runs one write on both servers and expects the same result from each. */
  async function both<T>(write: (c: Collection) => Promise<T>, strip: (r: T) => unknown = (r) => r): Promise<void> {
    const [a, b] = [await write(p), await write(q)];
    expect(strip(a)).to.deep.equal(strip(b));
  }

  it("answers like a scan after the initial load, and narrows indexed reads to their candidates", async () => {
    const before = { ...patched.indexes.stats };
    await expectSameAnswers("initial");
    expect(patched.indexes.stats.narrowed - before.narrowed).to.be.greaterThan(120);
    const plan = patched.indexes.explain(DB, "t", { a: AS[1], s: "approved" });
    expect(plan.index).to.match(/a: 1, at: -1|s: 1, at: -1/);
    expect(plan.candidates).to.be.lessThan(60);
    expect(patched.indexes.explain(DB, "t", { k: "k7" })).to.include({ candidates: 1, index: "{ k: 1 } on k" });
    expect(patched.indexes.explain(DB, "t", { s: { $gte: "a" } }).index).to.equal(null);
    expect(patched.indexes.explain(DB, "t", { a: AS[1], at: { $gte: new Date(Date.UTC(2026, 0, 1) + 35 * 60_000) } })).to.include({
      index: "{ a: 1, at: -1 } on a, at (range)",
    });
  });

  it("answers like a scan after updates that move documents between keys, to arrays and back", async () => {
    await both(
      (c) => c.updateMany({ a: AS[1] }, { $set: { a: AS[2] } }),
      (r) => [r.matchedCount, r.modifiedCount],
    );
    await both(
      (c) => c.updateOne({ k: "k20" }, { $set: { b: [1, 2] } }),
      (r) => r.modifiedCount,
    );
    await both(
      (c) => c.updateMany({ b: 9 }, { $set: { b: 4, "o.x": 3 } }),
      (r) => r.modifiedCount,
    );
    await both(
      (c) => c.updateMany({ "o.x": 1 }, { $unset: { o: "" } }),
      (r) => r.modifiedCount,
    );
    await both(
      (c) => c.replaceOne({ k: "k30" }, { k: "k30", a: AS[3], s: "replaced", at: new Date(0), n: -1 }),
      (r) => r.modifiedCount,
    );
    await both(
      (c) => c.updateMany({ s: "pending", a: AS[4] }, { $inc: { n: 1000 } }),
      (r) => r.modifiedCount,
    );
    await expectSameAnswers("after updates");
  });

  it("answers like a scan after deletes, and keeps the storage order when a deleted id comes back", async () => {
    await both(
      (c) => c.deleteMany({ s: "blocked", a: { $in: [AS[5], AS[6]] } }),
      (r) => r.deletedCount,
    );
    await both(
      (c) => c.deleteOne({ a: AS[7] }),
      (r) => r.deletedCount,
    );
    await both(
      (c) => c.deleteOne({ _id: ids[40] }),
      (r) => r.deletedCount,
    );
    // Reinserted, it goes to the end of the storage order, which decides sort ties and the first match.
    await both(
      (c) => c.insertOne({ _id: ids[40], k: "k40", a: AS[8], s: "pending", at: new Date(Date.UTC(2026, 0, 1)), n: 40 }),
      (r) => r.acknowledged,
    );
    await both(
      (c) => c.insertMany(makeDocs(60, 5000, rng(7))),
      (r) => r.insertedCount,
    );
    await expectSameAnswers("after deletes and inserts");
  });

  it("answers like a scan after upserts, findOneAndUpdate, findOneAndDelete and an unordered bulk write", async () => {
    const noId = (d: Document | null) => (d ? { ...d, _id: undefined } : d);
    await both(
      (c) => c.updateOne({ k: "u1" }, { $set: { a: AS[9], s: "pending", at: new Date(1) } }, { upsert: true }),
      (r) => r.upsertedCount,
    );
    await both(
      (c) => c.findOneAndUpdate({ a: AS[9], s: "pending" }, { $set: { s: "taken" } }, { sort: { at: 1, n: 1 }, returnDocument: "after" }),
      noId,
    );
    await both(
      (c) =>
        c.findOneAndUpdate(
          { k: "lease", holder: null },
          { $set: { holder: "x", s: "pending", a: AS[0] } },
          { upsert: true, returnDocument: "after" },
        ),
      noId,
    );
    await both((c) => c.findOneAndUpdate({ k: "lease", holder: null }, { $set: { holder: "y" } }, { returnDocument: "after" }), noId);
    await both((c) => c.findOneAndDelete({ a: AS[10], s: "failed" }, { sort: { at: -1 } }), noId);
    // The second operation must see the document the first one upserted.
    await both(
      (c) =>
        c.bulkWrite(
          [
            { updateOne: { filter: { k: "bulk" }, update: { $set: { a: AS[11], s: "pending", n: 1 } }, upsert: true } },
            { updateOne: { filter: { k: "bulk", a: AS[11] }, update: { $inc: { n: 1 } }, upsert: true } },
            { updateMany: { filter: { a: AS[3] }, update: { $set: { s: "bulked" } } } },
            { deleteOne: { filter: { k: { $in: ["k50", "k51"] } } } },
          ],
          { ordered: false },
        ),
      (r) => [r.insertedCount, r.matchedCount, r.modifiedCount, r.deletedCount, r.upsertedCount],
    );
    expect(await p.countDocuments({ k: "bulk" })).to.equal(1);
    expect((await p.findOne({ k: "bulk" }))?.n).to.equal(2);
    await expectSameAnswers("after upserts and bulk writes");
  });

  it("keeps a conditional findOneAndUpdate atomic: of 50 concurrent takers of one free lease, exactly one wins", async () => {
    const leases = clients[0].db(DB).collection("leases");
    await leases.createIndex({ name: 1 }, { unique: true });
    await leases.insertMany(Array.from({ length: 100 }, (_, i) => ({ name: `l${i}`, holder: null })));
    const takers = Array.from({ length: 50 }, (_, i) =>
      leases.findOneAndUpdate({ name: "l7", holder: null }, { $set: { holder: `h${i}` } }),
    );
    const won = (await Promise.all(takers)).filter((r) => r !== null);
    expect(won).to.have.length(1);
    expect(patched.indexes.explain(DB, "leases", { name: "l7", holder: null })).to.include({ candidates: 1 });
  });

  it("follows indexes declared or dropped after the data, and a dropped and refilled collection", async () => {
    for (const c of [p, q]) await c.createIndex({ n: 1 });
    expect(patched.indexes.explain(DB, "t", { n: 5 }).index).to.equal("{ n: 1 } on n");
    await expectSameAnswers("after a late createIndex");
    for (const c of [p, q]) await c.dropIndex("n_1");
    expect(patched.indexes.explain(DB, "t", { n: 5 }).index).to.equal(null);
    await Promise.all([p.drop(), q.drop()]);
    await both(
      (c) => c.insertMany(makeDocs(200, 0, rng(99)).map((d, i) => ({ ...d, _id: ids[i] }))),
      (r) => r.insertedCount,
    );
    expect(patched.indexes.explain(DB, "t", { a: AS[1] }).index).to.equal(null);
    await expectSameAnswers("after drop and refill");
  });
});
