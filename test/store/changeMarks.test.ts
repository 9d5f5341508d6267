/**
 * Change marks (src/store/changeMarks.ts) on the embedded store, with two clients standing for two instances and a
 * clock the test moves: a memory stands past its own age only while the mark, read at most maxAgeMs ago, has not moved.
 */
import { expect } from "chai";
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

  it("a memory stands within maxAgeMs of a read of the mark that found it unmoved; a move seen stops every earlier one", async () => {
    const mark = new ChangeMark(here, "test.a", 1_000, clock);
    const made = mark.current();
    const first = now;
    // The first read cannot tell what came before it: a memory made before stops standing.
    expect(await mark.confirmed(made)).to.equal(null);
    const after = mark.current();
    expect(await mark.confirmed(after)).to.equal(first);
    // A second on, the use waits for a new read, which finds the mark where it was.
    now += 1_000;
    const second = now;
    expect(await mark.confirmed(after)).to.equal(second);
    now += 499;
    expect(await mark.confirmed(after)).to.equal(second, "no read needed yet");
    // Another instance moves it: a second after the last read, the use waits for a new one, which finds it moved.
    await moveMark(there, "test.a");
    now += 501;
    expect(await mark.confirmed(after)).to.equal(null);
    expect(await mark.confirmed(mark.current())).to.equal(now, "a memory made after the move stands");
  });

  it("a mark that cannot be read confirms nothing, and a memory then stands only on its own age", async () => {
    const mark = new ChangeMark(here, "test.b", 1_000, clock);
    now += 2_000;
    await mark.confirmed(mark.current());
    const made = mark.current();
    now += 1_000;
    expect(await mark.confirmed(made)).to.equal(now);
    const closed = await connectStore(mongo.uri, "marks");
    const dead = new ChangeMark(closed, "test.b", 1_000, clock);
    await closed.close();
    expect(await dead.confirmed(dead.current())).to.equal(null);
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
