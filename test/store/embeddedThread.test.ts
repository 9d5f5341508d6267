import { expect } from "chai";
import { MongoClient } from "mongodb";
import { startEmbeddedMongoThread, type EmbeddedMongoThread } from "../../src/dev/embeddedStoreThread";
import { osThreads } from "../helpers/threads";

describe("embedded store in its own thread", function () {
  let threads: number;
  let mongo: EmbeddedMongoThread;
  let client: MongoClient;

  before(async function () {
    threads = osThreads();
    mongo = await startEmbeddedMongoThread();
    client = await MongoClient.connect(mongo.uri);
  });

  after(async function () {
    await client?.close();
    await mongo?.stop();
  });

  it("serves the MongoDB wire protocol on 127.0.0.1 from another thread than this one", async function () {
    expect(mongo.uri).to.match(/^mongodb:\/\/127\.0\.0\.1:\d+$/);
    expect(mongo.worker.threadId).to.be.greaterThan(0);
    expect(osThreads()).to.be.greaterThan(threads);
    const ping = await client.db("admin").command({ ping: 1 });
    expect(ping.ok).to.equal(1);
  });

  it("answers indexed reads and keeps concurrent conditional writes atomic", async function () {
    const coll = client.db("thread").collection<{ agent: string; n: number; at: number }>("counters");
    await coll.createIndex({ agent: 1, at: -1 });
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        coll.findOneAndUpdate({ agent: `a${i % 4}` }, { $inc: { n: 1 }, $set: { at: i } }, { upsert: true }),
      ),
    );
    const docs = await coll
      .find({ agent: { $in: ["a0", "a1", "a2", "a3"] } })
      .sort({ agent: 1 })
      .toArray();
    expect(docs.map((d) => [d.agent, d.n])).to.deep.equal([
      ["a0", 25],
      ["a1", 25],
      ["a2", 25],
      ["a3", 25],
    ]);
    expect(await coll.countDocuments({ agent: "a2" })).to.equal(1);
  });

  it("stop() stops the server and ends the thread", async function () {
    const before = osThreads();
    const other = await startEmbeddedMongoThread();
    expect(osThreads()).to.be.greaterThan(before);
    const exit = new Promise<number>((resolve) => other.worker.once("exit", resolve));
    await other.stop();
    expect(await exit).to.equal(0);
    expect(other.worker.threadId).to.equal(-1);
    const probe = new MongoClient(other.uri, { serverSelectionTimeoutMS: 500 });
    let refused: Error | undefined;
    try {
      await probe.connect();
    } catch (err) {
      refused = err as Error;
    } finally {
      await probe.close();
    }
    expect(refused, "the store's port still answers").to.not.equal(undefined);
    expect(osThreads()).to.be.at.most(before);
  });
});
