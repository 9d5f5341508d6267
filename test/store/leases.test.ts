import { expect } from "chai";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { connectStore, type Store } from "../../src/store";
import { DistributedMutex, type HeldLease, Leases } from "../../src/store/leases";

describe("DistributedMutex: a key's lease handed to the next task in the process", function () {
  let mongo: EmbeddedMongo;
  let store: Store;

  before(async function () {
    mongo = await startEmbeddedMongo();
    store = await connectStore(mongo.uri, "leases");
  });

  after(async function () {
    await store?.close();
    await mongo?.stop();
  });

  /** Leases of instance `holder` that count their releases. */
  function leasesOf(holder: string): Leases & { releases: number } {
    const l = new Leases(store, holder) as Leases & { releases: number };
    l.releases = 0;
    const release = l.release.bind(l);
    l.release = (name, token) => {
      l.releases++;
      return release(name, token);
    };
    return l;
  }

  it("runs queued tasks one at a time, each with its own fence (the one before cannot commit any more), and frees the lease once", async function () {
    const a = leasesOf("instance-a");
    const mutex = new DistributedMutex(a, "agent", 5_000);
    const seen: HeldLease[] = [];
    let running = 0;
    const task = (i: number) => async (lease: HeldLease) => {
      expect(++running).to.equal(1);
      seen.push(lease);
      if (i > 0) {
        // The lease the task before ran under no longer commits anything: its fence is behind.
        expect(await seen[i - 1].hold(`txn_${i - 1}`)).to.equal(false);
      }
      expect(await lease.hold(`txn_${i}`)).to.equal(true);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return i;
    };
    expect(await Promise.all([0, 1, 2].map((i) => mutex.run("0xAgent", task(i))))).to.deep.equal([0, 1, 2]);
    expect(seen.map((l) => l.fence)).to.deep.equal([seen[0].fence, seen[0].fence + 1, seen[0].fence + 2]);
    expect(seen.every((l) => l.token === seen[0].token && !l.tookOver)).to.equal(true);
    // Handed on twice, freed once, after the last (after its answer).
    await mutex.settled();
    expect(a.releases).to.equal(1);
    expect(await a.holderOf("agent:0xagent")).to.equal(null);
    // A task that comes alone afterwards takes the lease afresh.
    const alone = await mutex.run("0xAgent", (lease) => Promise.resolve(lease));
    expect(alone.token).to.not.equal(seen[0].token);
    expect(alone.fence).to.equal(seen[2].fence + 1);
    await mutex.settled();
    expect(a.releases).to.equal(2);
  });

  it("hands over within one instance only: a task of another instance never runs beside them, and gets its turn", async function () {
    const a = leasesOf("instance-a");
    const b = leasesOf("instance-b");
    const mutexA = new DistributedMutex(a, "agent", 5_000);
    const mutexB = new DistributedMutex(b, "agent", 5_000);
    const order: string[] = [];
    let running = 0;
    let most = 0;
    const step = (name: string) => async () => {
      most = Math.max(most, ++running);
      order.push(name);
      await new Promise((r) => setTimeout(r, 5));
      running--;
    };
    let open: () => void = () => undefined;
    const gate = new Promise<void>((r) => (open = r));
    const first = mutexA.run("0xBusy", async () => {
      most = Math.max(most, ++running);
      order.push("a0");
      await gate;
      running--;
    });
    while (!order.length) await new Promise((r) => setTimeout(r, 1));
    const waiting = mutexB.run("0xBusy", step("b"));
    const rest = Array.from({ length: 14 }, (_, i) => mutexA.run("0xBusy", step(`a${i + 1}`)));
    // b is polling for the lease by now.
    await new Promise((r) => setTimeout(r, 30));
    open();
    await Promise.all([first, waiting, ...rest]);
    expect(order).to.have.length(16);
    expect(order).to.include("b");
    expect(most).to.equal(1);
    await Promise.all([mutexA.settled(), mutexB.settled()]);
    expect(await a.holderOf("agent:0xbusy")).to.equal(null);
  });
});
