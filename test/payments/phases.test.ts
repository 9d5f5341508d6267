/**
 * The payment's phases (src/payments/phases.ts): the one table of moves, the compare-and-set writer on a real store
 * (embedded CongoDB over the wire), and the sources: no other file writes a payment's entry, so none writes a phase.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { expect } from "chai";
import { IN_FLIGHT, PHASES, PaymentLedger, canMove, ledgerEntry } from "../../src/payments/phases";
import { type Store, connectStore } from "../../src/store";
import type { PaymentDoc } from "../../src/store/documents";
import { type EmbeddedMongo, startEmbeddedMongo } from "../../src/dev/embeddedStore";

const SRC = join(__dirname, "../../src");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const base = {
  agentAddress: "0xa",
  ownerAddress: null,
  policyAddress: "0xa",
  merchant: "api.example.com",
  serviceUrl: "https://api.example.com/x",
  currency: "USDC" as const,
  intent: "test",
  approvalId: null,
};

describe("payment phases", () => {
  describe("the sources", () => {
    const WRITES =
      /payments\s*\.\s*(insertOne|insertMany|updateOne|updateMany|findOneAndUpdate|findOneAndReplace|replaceOne|bulkWrite|deleteOne|deleteMany)\b/g;
    const WRITERS = [join("payments", "phases.ts"), join("store", "ledger.ts")];

    it("only the phase writer and the indexer's ledger writer write to the payments collection", () => {
      const offenders = sources(SRC)
        .filter((f) => !WRITERS.includes(relative(SRC, f)))
        .flatMap((f) => [...readFileSync(f, "utf8").matchAll(WRITES)].map((m) => `${relative(SRC, f)}: ${m[0]}`));
      expect(offenders).to.deep.equal([]);
    });

    it("the indexer's ledger writer never names a phase: every phase write is in src/payments/phases.ts", () => {
      expect(readFileSync(join(SRC, "store", "ledger.ts"), "utf8")).not.to.match(/\bphase\s*:/);
    });

    it("no file under src/services/ writes a ledger entry through the phase writer's raw methods", () => {
      const raw = /\.ledger\s*\.\s*(insert|rewrite|begin|set|move|finish|claim)\s*\(/g;
      const offenders = sources(join(SRC, "services")).flatMap((f) =>
        [...readFileSync(f, "utf8").matchAll(raw)].map((m) => `${relative(SRC, f)}: ${m[0]}`),
      );
      expect(offenders).to.deep.equal([]);
    });

    it("no abstract class splits a file", () => {
      const abstract = sources(SRC).filter((f) => /\babstract class\b/.test(readFileSync(f, "utf8")));
      expect(abstract.map((f) => relative(SRC, f))).to.deep.equal([]);
    });
  });

  describe("the table", () => {
    it("a payment only moves forward, and nothing leaves done", () => {
      expect(PHASES.done).to.deep.equal([]);
      expect(canMove("quoted", "authorizing")).to.equal(true);
      expect(canMove("authorizing", "authorized")).to.equal(true);
      expect(canMove("authorized", "done")).to.equal(true);
      expect(canMove("authorized", "authorizing")).to.equal(false);
      expect(canMove("authorized", "quoted")).to.equal(false);
      expect(canMove("done", "authorized")).to.equal(false);
      // The one way back: an approved payment whose commit failed before anything was sent waits for its owner again.
      expect(canMove("authorizing", "quoted")).to.equal(true);
      expect(IN_FLIGHT).to.deep.equal(["authorizing", "authorized"]);
    });

    it("every phase in the table is a phase a payment can reach from a new entry", () => {
      const reached = new Set<string>(["new"]);
      for (let i = 0; i < 4; i++) for (const from of [...reached]) for (const to of PHASES[from as keyof typeof PHASES]) reached.add(to);
      expect([...reached].sort()).to.deep.equal(["authorized", "authorizing", "done", "new", "quoted"]);
    });
  });

  describe("the writer (compare-and-set on a real store)", () => {
    let mongo: EmbeddedMongo;
    let store: Store;
    let ledger: PaymentLedger;
    let n = 0;
    const txn = () => `txn_phase_${++n}`;
    const phaseOf = async (txnId: string) => (await store.payments.findOne({ txnId }))?.phase;

    before(async () => {
      mongo = await startEmbeddedMongo();
      store = await connectStore(mongo.uri, "phases");
      ledger = new PaymentLedger(store.payments);
    });
    after(async () => {
      await store.close();
      await mongo.stop();
    });

    it("a new entry may start quoted (an approval), authorizing, authorized (a refusal's stray record) or done (a refusal)", async () => {
      const id = txn();
      await ledger.insert(ledgerEntry(id, base, { amount: "1", status: "pending", phase: "quoted" }));
      expect(await phaseOf(id)).to.equal("quoted");
    });

    it("begin moves an approval's entry from quoted to authorizing once; a second begin finds it moved and writes nothing", async () => {
      const id = txn();
      await ledger.insert(ledgerEntry(id, base, { amount: "1", status: "pending", phase: "quoted" }));
      const set = { amount: "1", status: "processing" as const, paymentId: "0x01" };
      expect(await ledger.begin(id, set, true, new Date())).to.equal(true);
      expect(await ledger.begin(id, { ...set, paymentId: "0x02" }, true, new Date())).to.equal(false);
      const doc = await store.payments.findOne({ txnId: id });
      expect(doc).to.include({ phase: "authorizing", paymentId: "0x01" });
    });

    it("insertOnce writes a payment's outcome once: the first writer wins (a voucher's run, or recovery), the second writes nothing", async () => {
      const id = txn();
      const approved = ledgerEntry(id, base, { amount: "1", status: "approved", phase: "done" });
      const [first, second] = await Promise.all([
        ledger.insertOnce(approved),
        ledger.insertOnce(ledgerEntry(id, base, { amount: "1", status: "failed", phase: "done" })),
      ]);
      expect([first, second].filter(Boolean)).to.have.length(1);
      expect(await store.payments.countDocuments({ txnId: id })).to.equal(1);
      expect(await ledger.insertOnce(approved)).to.equal(false);
    });

    it("begin of a new payment refuses a txnId already written, whatever its phase", async () => {
      const id = txn();
      await ledger.insert(ledgerEntry(id, base, { amount: "1", status: "approved", phase: "done" }));
      expect(await ledger.begin(id, { amount: "1", status: "processing", paymentId: "0x03" }, false, new Date())).to.equal(false);
      expect(await phaseOf(id)).to.equal("done");
    });

    it("a move or a finish from a phase the entry is not in changes nothing and says so", async () => {
      const id = txn();
      await ledger.insert(ledgerEntry(id, base, { amount: "1", status: "processing", phase: "authorizing", paymentId: "0x04" }));
      expect(await ledger.move(id, ["authorizing"], "authorized", { authorizeBlock: 7 })).to.equal(true);
      // A late write of the earlier phase (a run that lost the race) does not move it back.
      expect(await ledger.set(id, "authorizing", { authorizeTxHash: "0xlate" })).to.equal(false);
      const done = await ledger.finish(id, ["authorized"], { status: "approved" });
      expect(done).to.include({ phase: "done", status: "approved" });
      // Recovery finishing it a second time (it decided "failed") writes nothing: the first outcome stands.
      expect(await ledger.finish(id, ["authorizing", "authorized"], { status: "failed" })).to.equal(null);
      expect(await ledger.move(id, ["authorizing"], "authorized", {})).to.equal(false);
      const doc = (await store.payments.findOne({ txnId: id })) as PaymentDoc;
      expect(doc).to.include({ phase: "done", status: "approved", authorizeTxHash: null, authorizeBlock: 7 });
    });

    it("a move the table forbids is a programming error, thrown before any write", async () => {
      const id = txn();
      await ledger.insert(ledgerEntry(id, base, { amount: "1", status: "processing", phase: "authorized", paymentId: "0x05" }));
      const back = await ledger.move(id, ["authorized"], "authorizing", {}).catch((e: unknown) => e);
      expect(String(back)).to.match(/cannot move from authorized to authorizing/);
      const again = await ledger.finish(id, ["done"], {}).catch((e: unknown) => e);
      expect(String(again)).to.match(/cannot move from done to done/);
      expect(await phaseOf(id)).to.equal("authorized");
    });

    it("of two concurrent finishes exactly one writes the outcome", async () => {
      const id = txn();
      await ledger.insert(ledgerEntry(id, base, { amount: "1", status: "processing", phase: "authorized", paymentId: "0x06" }));
      const [a, b] = await Promise.all([
        ledger.finish(id, ["authorized"], { status: "approved" }),
        ledger.finish(id, ["authorized"], { status: "failed" }),
      ]);
      expect([a, b].filter((d) => d !== null)).to.have.length(1);
    });
  });
});
