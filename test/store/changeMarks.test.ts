/**
 * Change marks (src/store/changeMarks.ts) on the embedded store, with two clients standing for two instances and a
 * clock the test moves: a memory stands past its own age only while the mark, read at most maxAgeMs ago, has not moved.
 */
import { expect } from "chai";
import { type Document, MongoClient } from "mongodb";
import pino from "pino";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { connectStore, type Store } from "../../src/store";
import { ChangeMark, changeMarks, moveMark } from "../../src/store/changeMarks";
import { WebhookOutbox } from "../../src/webhooks/outbox";
import type { WebhookEndpointDoc } from "../../src/webhooks/documents";

describe("change marks: memories that stand while nothing of their kind changed", () => {
  let mongo: EmbeddedMongo;
  let here: Store;
  let there: Store;
  let now = 1_000_000;
  const clock = () => now;

  before(async () => {
    mongo = await startEmbeddedMongo();
    [here, there] = await Promise.all([connectStore(mongo.uri, "marks"), connectStore(mongo.uri, "marks")]);
  });
  after(async () => {
    await Promise.all([here?.close(), there?.close()]);
    await mongo?.stop();
  });

  const markOn = (store: Pick<Store, "collection">, name: string, longestMs = 60_000) =>
    new ChangeMark(store, name, { maxAgeMs: 1_000, longestMs, now: clock });

  it("a memory stands within maxAgeMs of a read of the mark that found it unmoved; a move seen stops every earlier one", async () => {
    const mark = markOn(here, "test.a");
    const made = mark.current();
    const first = now;
    // The first read cannot tell what came before it: a memory made before stops standing.
    expect(await mark.confirmed(made, now)).to.equal(null);
    const after = mark.current();
    const madeAt = now;
    expect(await mark.confirmed(after, madeAt)).to.equal(first);
    // A second on, the use waits for a new read, which finds the mark where it was.
    now += 1_000;
    const second = now;
    expect(await mark.confirmed(after, madeAt)).to.equal(second);
    now += 499;
    expect(await mark.confirmed(after, madeAt)).to.equal(second, "no read needed yet");
    // Another instance moves it: a second after the last read, the use waits for a new one, which finds it moved.
    await moveMark(there, "test.a");
    now += 501;
    expect(await mark.confirmed(after, madeAt)).to.equal(null);
    expect(await mark.confirmed(mark.current(), now)).to.equal(now, "a memory made after the move stands");
  });

  it("a mark that cannot be read confirms nothing: a memory stands until maxAgeMs after the last read that could", async () => {
    // A store of its own, stopped halfway, and a client that gives up on it at once.
    const own = await startEmbeddedMongo();
    const client = new MongoClient(own.uri, { serverSelectionTimeoutMS: 200, serverMonitoringMode: "poll" });
    try {
      const mark = markOn({ collection: <T extends Document>(name: string) => client.db("marks").collection<T>(name) }, "test.b");
      await mark.confirmed(mark.current(), now);
      const [made, madeAt] = [mark.current(), now];
      now += 1_000;
      const last = now;
      expect(await mark.confirmed(made, madeAt)).to.equal(last);
      await own.stop();
      now += 999; // a read starts, and fails
      expect(await mark.confirmed(made, madeAt)).to.equal(last);
      now += 1;
      expect(await mark.confirmed(made, madeAt), "no read since could confirm it").to.equal(null);
    } finally {
      await client.close();
      await own.stop().catch(() => undefined);
    }
  });

  it("a clock that goes back makes a memory and the mark's last read too old, and a memory stands longestMs at most", async () => {
    const mark = markOn(here, "test.c", 5_000);
    await mark.confirmed(mark.current(), now);
    const [made, madeAt] = [mark.current(), now];
    expect(await mark.confirmed(made, madeAt)).to.equal(now);
    await moveMark(there, "test.c");
    now -= 60_000; // stepped back: the memory is from the future
    expect(await mark.confirmed(made, madeAt)).to.equal(null);
    // A memory made after the step, in the mark's epoch as it was: the last read is from the future, so the use waits
    // for a new one, which finds the mark moved.
    expect(await mark.confirmed(made, now)).to.equal(null);
    const [later, laterAt] = [mark.current(), now];
    expect(await mark.confirmed(later, laterAt)).to.equal(now);
    // Nothing moves it from here on; the memory stands on it for longestMs after its own read, no longer.
    for (let t = 1_000; t < 5_000; t += 1_000) {
      now = laterAt + t;
      expect(await mark.confirmed(later, laterAt)).to.equal(now);
    }
    now = laterAt + 5_000;
    expect(await mark.confirmed(later, laterAt)).to.equal(null);
  });

  it("an endpoint created on another instance is heard here within a second, and one read of the mark a second stands for every owner", async () => {
    const logger = pino({ level: "silent" });
    const outbox = new WebhookOutbox(here, logger, clock);
    const owners = ["0x00000000000000000000000000000000000000a1", "0x00000000000000000000000000000000000000a2"];
    const endpoints = here.collection<WebhookEndpointDoc>("webhookEndpoints");
    const find = endpoints.find.bind(endpoints);
    let reads = 0;
    Object.assign(endpoints, { find: (...args: Parameters<typeof find>) => (reads++, find(...args)) });
    // The outbox reads through its own collection object: count there.
    Object.assign(outbox.c, { endpoints });
    for (const o of owners) expect([...(await outbox.subscribed(o))]).to.deep.equal([]);
    now += 1_000; // the mark's first read: the memories are read again
    for (const o of owners) await outbox.subscribed(o);
    expect(reads).to.equal(4);
    for (let i = 0; i < 3; i++) {
      now += 1_000;
      for (const o of owners) expect([...(await outbox.subscribed(o))]).to.deep.equal([]);
    }
    expect(reads, "answered on the mark").to.equal(4);
    // Instance B creates an endpoint for the first owner (its outbox moves the mark).
    const other = new WebhookOutbox(there, logger, clock);
    await other.c.endpoints.insertOne({
      endpointId: "we_test",
      ownerAddress: owners[0],
      url: "https://example.com/hook",
      events: ["payment.approved"],
      description: null,
      secret: { iv: "", tag: "", data: "" } as unknown as WebhookEndpointDoc["secret"],
      status: "active",
      createdAt: new Date(),
      disabledAt: null,
    });
    await other.endpointsChanged();
    now += 1_000;
    expect([...(await outbox.subscribed(owners[0]))]).to.deep.equal(["payment.approved"]);
    expect(await changeMarks(here).countDocuments({ name: "webhookEndpoints.changed" })).to.equal(1);
  });
});
