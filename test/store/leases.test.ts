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

  /** Leases of instance `holder` (on `clock`) that count their acquisitions and releases. */
  function leasesOf(
    holder: string,
    clock?: () => number,
    deadHolders?: () => readonly string[],
  ): Leases & { acquisitions: number; releases: number } {
    const l = new Leases(store, holder, clock, deadHolders) as Leases & { acquisitions: number; releases: number };
    l.acquisitions = 0;
    l.releases = 0;
    const acquire = l.acquire.bind(l);
    l.acquire = (name, ttlMs, token) => {
      l.acquisitions++;
      return acquire(name, ttlMs, token);
    };
    const release = l.release.bind(l);
    l.release = (name, token) => {
      l.releases++;
      return release(name, token);
    };
    return l;
  }

  it("runs queued fenced tasks one at a time under one acquisition (the task before cannot commit any more) and frees the lease once", async function () {
    const a = leasesOf("instance-a");
    const mutex = new DistributedMutex(a, "agent", 5_000);
    const seen: HeldLease[] = [];
    let running = 0;
    const task = (i: number) => async (lease: HeldLease) => {
      expect(++running).to.equal(1);
      seen.push(lease);
      if (i > 0) {
        // The lease the task before ran under no longer commits anything, though it is the same acquisition.
        expect(await seen[i - 1].hold(`txn_${i - 1}`)).to.equal(false);
      }
      expect(await lease.hold(`txn_${i}`)).to.equal(true);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return i;
    };
    expect(await Promise.all([0, 1, 2].map((i) => mutex.run("0xAgent", task(i), { fenced: true })))).to.deep.equal([0, 1, 2]);
    expect(seen.every((l) => l.token === seen[0].token && l.fence === seen[0].fence && !l.tookOver)).to.equal(true);
    // Taken once, handed on twice with no store command, freed once, after the last (after its answer).
    expect(a.acquisitions).to.equal(1);
    await mutex.settled();
    expect(a.releases).to.equal(1);
    expect(await a.holderOf("agent:0xagent")).to.equal(null);
    // A task that comes alone afterwards takes the lease afresh.
    const alone = await mutex.run("0xAgent", (lease) => Promise.resolve(lease));
    expect(alone.token).to.not.equal(seen[0].token);
    expect(alone.fence).to.equal(seen[0].fence + 1);
    await mutex.settled();
    expect(a.releases).to.equal(2);
  });

  it("takes a handed lease again when less than two thirds of it are left, so it is renewed in time", async function () {
    let now = Date.now();
    const a = leasesOf("instance-a", () => now);
    const mutex = new DistributedMutex(a, "agent", 3_000);
    const seen: HeldLease[] = [];
    const task = (advance: number) => async (lease: HeldLease) => {
      seen.push(lease);
      expect(await lease.hold("txn")).to.equal(true);
      now += advance;
    };
    const run = (advance: number) => mutex.run("0xSlow", task(advance), { fenced: true });
    // 999 ms used of 3,000: the next runs as handed. 2 ms more (1,999 left): taken again, same token, a new fence.
    await Promise.all([run(999), run(2), run(0)]);
    expect(a.acquisitions).to.equal(2);
    expect(seen.map((l) => l.fence)).to.deep.equal([seen[0].fence, seen[0].fence, seen[0].fence + 1]);
    expect(seen.every((l) => l.token === seen[0].token)).to.equal(true);
    await mutex.settled();
  });

  it("counts a renewal that answered, and not one that found the lease gone", async function () {
    this.timeout(10_000);
    /** Two fenced tasks on a lease of 3,000 ms (renewed every 1,000 ms of real time); the first uses 1,500 ms of it. */
    const twoTasks = async (lose: boolean) => {
      let now = Date.now();
      const a = leasesOf("instance-a", () => now);
      const mutex = new DistributedMutex(a, "agent", 3_000);
      const first = mutex.run(
        "0xRenewed",
        async (lease) => {
          expect(await lease.hold("txn_0")).to.equal(true);
          // Freed meanwhile (a restart under the same id), or not.
          if (lose) await new Leases(store, "instance-a").releaseAllOf();
          now += 1_500; // only a renewal leaves two thirds of it
          await new Promise((r) => setTimeout(r, 1_150)); // one renewal answers
        },
        { fenced: true },
      );
      const second = mutex.run("0xRenewed", (lease) => lease.hold("txn_1"), { fenced: true });
      await first;
      expect(await second).to.equal(true);
      await mutex.settled();
      return a.acquisitions;
    };
    expect(await twoTasks(false)).to.equal(1);
    expect(await twoTasks(true)).to.equal(2);
  });

  it("checks a handed lease in the store before a task that is not fenced: it never runs beside another instance's", async function () {
    /** a's next task starts after `other` took the key (a judged dead, or a restart under a's id): it waits for it. */
    const overlapAfter = async (other: Leases) => {
      const mutexA = new DistributedMutex(leasesOf("instance-a"), "agent", 5_000);
      const mutexB = new DistributedMutex(other, "agent", 5_000);
      let bRunning = false;
      let overlap = false;
      let open: () => void = () => undefined;
      const gate = new Promise<void>((r) => (open = r));
      let bStarted: () => void = () => undefined;
      const started = new Promise<void>((r) => (bStarted = r));
      let bDone: Promise<void> = Promise.resolve();
      const first = mutexA.run("0xTaken", async () => {
        bDone = mutexB.run("0xTaken", async () => {
          bRunning = true;
          bStarted();
          await gate;
          bRunning = false;
        });
        await started;
      });
      const second = mutexA.run("0xTaken", () => {
        overlap ||= bRunning;
        return Promise.resolve();
      });
      await first;
      setTimeout(open, 100);
      await Promise.all([second, bDone]);
      await Promise.all([mutexA.settled(), mutexB.settled()]);
      return overlap;
    };
    expect(await overlapAfter(leasesOf("instance-b", undefined, () => ["instance-a"]))).to.equal(false);
    const restarted = leasesOf("instance-a");
    const acquire = restarted.acquire.bind(restarted);
    restarted.acquire = async (name, ttlMs, token) => {
      await restarted.releaseAllOf(); // the new process frees its predecessor's leases at boot
      return acquire(name, ttlMs, token);
    };
    expect(await overlapAfter(restarted)).to.equal(false);
  });

  it("a fenced task under a handed lease another instance took meanwhile (this one judged dead) commits nothing", async function () {
    const a = leasesOf("instance-a");
    const b = leasesOf("instance-b", Date.now, () => ["instance-a"]);
    const mutex = new DistributedMutex(a, "agent", 5_000);
    let taken: HeldLease | null = null;
    const first = mutex.run(
      "0xStalled",
      async (lease) => {
        expect(await lease.hold("txn_0")).to.equal(true);
        // Meanwhile instance b judges a dead (its heartbeat went stale) and takes its lease at once.
        taken = await b.acquire("agent:0xstalled", 5_000);
      },
      { fenced: true },
    );
    const second = mutex.run("0xStalled", (lease) => lease.hold("txn_1"), { fenced: true });
    await first;
    expect(taken).to.not.equal(null);
    expect(taken!.tookOver).to.equal(true);
    expect(await second).to.equal(false);
    expect(await taken!.hold("txn_b")).to.equal(true);
    expect(a.acquisitions).to.equal(1);
    await mutex.settled();
    // a's free after the second task does not free b's lease.
    expect(await a.holderOf("agent:0xstalled")).to.equal("instance-b");
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
