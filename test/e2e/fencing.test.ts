/**
 * The stall window (README: "An instance that stalls"): instance A takes an agent's lock (and an Idempotency-Key), then stalls past its
 * leases (a GC pause, a frozen VM, a partition from the database); B takes over and pays; A wakes up and carries on.
 * Two instances share one chain and one store. A stall is played without waiting: A is held at a gate in front of a
 * real x402 seller, and B's lease clock is moved past A's leases (an injected clock), which is what B sees when A
 * stops renewing.
 */
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Leases } from "../../src/store/leases";
import { idempotencyScope, requestHashOf } from "../../src/payments/idempotency";
import { MAX_PENDING_APPROVALS } from "../../src/payments/pending";
import type { PaymentDoc } from "../../src/store/documents";
import { randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { approvalDecision } from "../helpers/payments";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { fundedStockSchemeFacilitator, startUptoSeller } from "../helpers/schemeSellers";

const USDC = 1_000_000n;
const LEASE_MS = 5_000;

interface Gate {
  url: string;
  /** Arrivals and answers, in order: `<path> quote|paid in|out`. */
  events: string[];
  /** Holds the next request to `path` (paid or not) until the returned function is called. */
  hold(path: string, paid: boolean): Promise<() => void>;
  close(): Promise<void>;
}

/** A pass-through proxy to a seller that can hold one request: where an instance is made to stall. */
async function startGate(target: string): Promise<Gate> {
  const events: string[] = [];
  const holds: { path: string; paid: boolean; arrived: (release: () => void) => void }[] = [];
  const isPaid = (req: IncomingMessage) =>
    typeof req.headers["x-payment"] === "string" || typeof req.headers["payment-signature"] === "string";
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://gate").pathname;
    const paid = isPaid(req);
    const tag = `${path} ${paid ? "paid" : "quote"}`;
    events.push(`${tag} in`);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const forward = async () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers))
          if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers[k] = v;
        const body = chunks.length ? Buffer.concat(chunks) : undefined;
        const r = await fetch(target, { method: req.method, headers, body });
        const out: Record<string, string> = {};
        r.headers.forEach((v, k) => {
          if (!["content-length", "content-encoding", "transfer-encoding", "connection"].includes(k)) out[k] = v;
        });
        const text = Buffer.from(await r.arrayBuffer());
        events.push(`${tag} out`);
        res.writeHead(r.status, out).end(text);
      };
      const i = holds.findIndex((h) => h.path === path && h.paid === paid);
      if (i < 0) return void forward();
      const [h] = holds.splice(i, 1);
      h.arrived(() => void forward());
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    events,
    hold: (path, paid) => new Promise((arrived) => holds.push({ path, paid, arrived })),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

async function until<T>(what: () => Promise<T | null | undefined | false> | T | null | undefined | false): Promise<T> {
  for (;;) {
    const v = await what();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("fencing: an instance that stalled past its leases never pays after another took over", function () {
  this.timeout(120_000);
  let pair: TwoInstances;
  let seller: TestSeller;
  let gate: Gate;
  let a: Stack;
  let b: Stack;

  before(async () => {
    pair = await startTwoInstances({ env: { LOCK_LEASE_MS: String(LEASE_MS) } });
    ({ a, b } = pair);
    seller = await startV2Seller({ facilitator: await fundedFacilitator(a), usdc: a.svc.config.usdcAddress, price: USDC });
    gate = await startGate(seller.resource);
  });
  afterEach(() => {
    pair.skew = 0;
  });
  after(async () => {
    await gate?.close();
    await seller?.close();
    await pair?.close();
  });

  async function agent(approvalThreshold = "1") {
    const ag = await a.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "20", approvalThreshold, allowlist: ["127.0.0.1"] });
    await mintUsdc(a, ag.agentAddress, 10n * USDC);
    return ag;
  }
  const pay = (s: Stack, ag: { agentAddress: string; apiKey: string }, path: string, key?: string) =>
    s.api("POST", "/pay", {
      key: ag.apiKey,
      headers: key ? { "Idempotency-Key": key } : {},
      body: { agentAddress: ag.agentAddress, serviceUrl: `${gate.url}${path}`, maxAmount: "1", intent: path },
    });

  /**
   * A pays `pathA` and stalls at the seller's quote, holding the agent's lock; B takes the lock over (A's lease looks run
   * out to it) paying `pathB`, and waits at its own quote. Each goes on when its resume is called.
   */
  async function bothAtQuotes(ag: { agentAddress: string; apiKey: string }, pathA: string, pathB: string) {
    const stalledA = gate.hold(pathA, false);
    const first = pay(a, ag, pathA);
    const resumeA = await stalledA;
    pair.skew = 2 * LEASE_MS;
    const stalledB = gate.hold(pathB, false);
    const second = pay(b, ag, pathB);
    const resumeB = await stalledB;
    return { first, second, resumeA, resumeB };
  }

  it("leases: every acquisition raises the fence; a take-over is marked, and the old holder's hold fails", async () => {
    let now = Date.now();
    const one = new Leases(a.svc.store, "one", () => now);
    const two = new Leases(a.svc.store, "two", () => now);
    const first = (await one.acquire("test:fence", 1_000))!;
    expect(first).to.include({ tookOver: false });
    expect(await first.hold("txn_x")).to.equal(true);
    now += 1_001;
    const second = (await two.acquire("test:fence", 1_000))!;
    expect(second.fence).to.equal(first.fence + 1);
    expect(second.tookOver).to.equal(true);
    expect(await first.hold("txn_x")).to.equal(false);
    expect(await second.hold("txn_y")).to.equal(true);
    await two.release("test:fence", second.token);
    const third = (await one.acquire("test:fence", 1_000))!;
    expect(third).to.include({ fence: second.fence + 1, tookOver: false }); // freed, not taken over
  });

  it("one Idempotency-Key, A stalled before paying, B took the key over and paid: A stops, one payment", async () => {
    const ag = await agent();
    const before = await usdcBalance(a, ag.agentAddress);
    const stalled = gate.hold("/k", false);
    const first = pay(a, ag, "/k", "fence-key-1");
    const resumeA = await stalled; // A holds the key and the agent's lock, and waits on the seller's quote
    pair.skew = 2 * LEASE_MS;
    const second = await pay(b, ag, "/k", "fence-key-1");
    expect(second.status, JSON.stringify(second.body)).to.equal(200);
    resumeA();
    const late = await first;
    expect(await usdcBalance(a, ag.agentAddress), "paid once").to.equal(before - USDC);
    expect(late.status, JSON.stringify(late.body)).to.equal(409);
    expect(late.body.error).to.equal("conflict");
    const docs = await a.svc.store.payments.find({ agentAddress: ag.agentAddress }).toArray();
    expect(docs.map((d) => d.status)).to.deep.equal(["approved"]);
    expect(gate.events.filter((e) => e === "/k paid in")).to.have.length(1);
    // The key answers with B's payment, on either instance.
    pair.skew = 0;
    const again = await pay(a, ag, "/k", "fence-key-1");
    expect(again.status).to.equal(200);
    expect(again.headers.get("idempotent-replayed")).to.equal("true");
    expect(again.body.transactionId).to.equal(second.body.transactionId);
  });

  it("a run that wrote its ledger entry and died before committing it: a repeat takes the key over, the entry goes", async () => {
    const body = { intent: "orphan" };
    const scope = idempotencyScope("caller-o", "key-o");
    const now = new Date();
    const expired = new Date(now.getTime() - 1);
    await a.svc.store.idempotency.insertOne({
      ...{ scope, requestHash: requestHashOf(body), state: "in_progress", response: null, holder: "inst-gone" },
      ...{ leaseUntil: expired, fence: 1, txnId: null, createdAt: now, expiresAt: new Date(now.getTime() + 3_600_000) },
    });
    const { _id, ...paid } = (await a.svc.store.payments.findOne({ status: "approved" }))!;
    const orphan = { ...paid, txnId: "txn_orphan", idempotencyScope: scope };
    await a.svc.store.payments.insertOne({ ...orphan, status: "processing", phase: "authorizing", authorizeTxHash: null } as PaymentDoc);
    const res = await b.svc.services.idempotency.run("caller-o", "key-o", body, () =>
      Promise.resolve({ error: { error: "bad_request", message: "ran", status: 400 } }),
    );
    expect(res).to.deep.include({ error: { error: "bad_request", message: "ran", status: 400 }, replayed: false });
    expect(await a.svc.store.payments.findOne({ txnId: "txn_orphan" })).to.equal(null);
    expect(await a.svc.store.idempotency.findOne({ scope })).to.include({ state: "done", fence: 2, holder: "inst-b" });
  });

  it("one Idempotency-Key above the approval threshold, A stalled, B took the key over: one approval, not two", async () => {
    const ag = await agent("0.5");
    const stalled = gate.hold("/ap", false);
    const first = pay(a, ag, "/ap", "fence-key-ap");
    const resumeA = await stalled;
    pair.skew = 2 * LEASE_MS;
    const second = await pay(b, ag, "/ap", "fence-key-ap");
    expect(second.status, JSON.stringify(second.body)).to.equal(202);
    resumeA();
    const late = await first;
    expect(await a.svc.store.approvals.countDocuments({ agentAddress: ag.agentAddress }), "approvals").to.equal(1);
    expect(late.status, JSON.stringify(late.body)).to.equal(409);
  });

  it("A stalled holding the agent's lock asks for an approval after B took the lock over: A's request is undone, B's counts", async () => {
    const ag = await agent("0.5");
    // 19 requests wait for the owner already: one more fills the queue (MAX_PENDING_APPROVALS).
    const now = new Date();
    await a.svc.store.approvals.insertMany(
      Array.from({ length: MAX_PENDING_APPROVALS - 1 }, (_, i) => ({
        ...{ approvalId: `apr_full_${i}`, txnId: `txn_full_${i}`, agentAddress: ag.agentAddress, ownerAddress: null },
        ...{ merchant: "127.0.0.1", serviceUrl: `${gate.url}/full`, method: "GET" as const, amount: "1000000", maxAmount: "1000000" },
        ...{
          intent: "full",
          status: "pending" as const,
          requestedAt: now,
          resolvedAt: null,
          expiresAt: new Date(now.getTime() + 3_600_000),
        },
      })),
    );
    const { first, second, resumeA, resumeB } = await bothAtQuotes(ag, "/q1", "/q2");
    resumeA();
    const late = await first;
    expect(late.status, JSON.stringify(late.body)).to.equal(409);
    resumeB();
    const held = await second;
    expect(held.status, JSON.stringify(held.body)).to.equal(202);
    const waiting = await a.svc.store.approvals.find({ agentAddress: ag.agentAddress, status: "pending" }).toArray();
    expect(waiting, "the queue's cap").to.have.length(MAX_PENDING_APPROVALS);
    expect(waiting.map((w) => w.intent))
      .to.include("/q2")
      .and.not.include("/q1");
    expect(await a.svc.store.payments.findOne({ agentAddress: ag.agentAddress, intent: "/q1" }), "A's entry").to.equal(null);
  });

  it("A's approval request, which the owner claimed through B before A's undo: it stands, with its entry, answered pending", async () => {
    const owner = randomOwner();
    const ag = await a.onboard(owner, { perTxLimit: "1", dailyBudget: "20", approvalThreshold: "0.5", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, ag.agentAddress, 10n * USDC);
    const ownerApiKey = await ownerKey(b, owner);
    const { first, second, resumeA, resumeB } = await bothAtQuotes(ag, "/u1", "/u2");
    // Right before A's undo (its hold failed), the owner, who sees A's request listed, approves it through B: B claims it
    // and asks the seller again (held here), as an approval does before its entry moves.
    const approvals = a.svc.store.approvals;
    const deleteOne = approvals.deleteOne.bind(approvals);
    let approving: ReturnType<Stack["api"]> | undefined;
    let resumeApproval: () => void = () => undefined;
    approvals.deleteOne = async (filter: { approvalId?: string }, ...rest: []) => {
      if (filter?.approvalId && !approving) {
        const requote = gate.hold("/u1", false);
        const item = { id: filter.approvalId, agentAddress: ag.agentAddress, merchant: "127.0.0.1", amount: "1" };
        const body = await approvalDecision(b, owner, item, "approve");
        approving = b.api("POST", `/approvals/${item.id}/approve`, { key: ownerApiKey, body });
        resumeB();
        resumeApproval = await requote;
      }
      return deleteOne(filter, ...rest);
    };
    try {
      resumeA();
      const late = await first;
      expect(late.status, JSON.stringify(late.body)).to.equal(202);
      const mine = (await a.svc.store.approvals.findOne({ agentAddress: ag.agentAddress, intent: "/u1" }))!;
      expect(mine.approvalId).to.equal(late.body.approvalId);
      expect(mine.status).to.equal("approving");
      expect(await a.svc.store.payments.findOne({ txnId: mine.txnId }), "its entry").to.not.equal(null);
      resumeApproval();
      const approved = await approving!;
      expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
      expect((await second).status).to.equal(202);
      expect(await a.svc.store.payments.findOne({ txnId: mine.txnId })).to.include({ status: "approved" });
    } finally {
      approvals.deleteOne = deleteOne;
    }
  });

  it("A stalled holding the agent's lock, its payment refused by the policy: after B took the lock over, A records nothing", async () => {
    const ag = await a.onboard(randomOwner(), { perTxLimit: "0.5", dailyBudget: "20", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, ag.agentAddress, 10n * USDC);
    const stalled = gate.hold("/r1", false);
    const first = pay(a, ag, "/r1");
    const resumeA = await stalled; // A holds the agent's lock and waits on the seller's quote (1 USDC, over its limit)
    pair.skew = 2 * LEASE_MS;
    // B's payment under the lock it took: refused too, for a reason never recorded on-chain (above the caller's maxAmount).
    const second = await b.api("POST", "/pay", {
      key: ag.apiKey,
      body: { agentAddress: ag.agentAddress, serviceUrl: `${gate.url}/r2`, maxAmount: "0.5", intent: "/r2" },
    });
    expect(second.body.reason, JSON.stringify(second.body)).to.equal("max_amount_exceeded");
    resumeA();
    const late = await first;
    expect(late.status, JSON.stringify(late.body)).to.equal(409);
    const docs = await a.svc.store.payments.find({ agentAddress: ag.agentAddress }).toArray();
    expect(docs.map((d) => [d.intent, d.status, d.txHash])).to.deep.equal([["/r2", "blocked", null]]);
  });

  it("A stalled holding the agent's lock meets the upto ceiling B has in flight: A leaves it alone, B's payment goes through", async () => {
    const facilitator = await fundedStockSchemeFacilitator(a.svc.config.rpcUrl);
    const upto = await startUptoSeller({ facilitator: facilitator.client, usdc: a.svc.config.usdcAddress, ceiling: 400_000n });
    const uptoGate = await startGate(upto.resource);
    try {
      upto.setUsage(150_000n);
      const ag = await agent();
      const payUpto = (s: Stack, path: string) =>
        s.api("POST", "/pay", {
          key: ag.apiKey,
          body: { agentAddress: ag.agentAddress, serviceUrl: `${uptoGate.url}${path}`, maxAmount: "1", intent: path },
        });
      const stalled = uptoGate.hold("/x1", false);
      const first = payUpto(a, "/x1");
      const resumeA = await stalled; // A holds the agent's lock and waits on the seller's quote
      pair.skew = 2 * LEASE_MS;
      const inFlight = uptoGate.hold("/x2", true);
      const second = payUpto(b, "/x2");
      const settleB = await inFlight; // B's ceiling is authorised on-chain and its paid request at the seller
      resumeA();
      const late = await first;
      expect(late.status, JSON.stringify(late.body)).to.equal(409);
      settleB();
      const paid = await second;
      expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
      expect(paid.body).to.include({ scheme: "upto", amount: "0.15" });
      expect(await usdcBalance(a, upto.payTo)).to.equal(150_000n);
    } finally {
      await uptoGate.close();
      await upto.close();
    }
  });

  it("A stalled holding the agent's lock wakes while B's payment is in flight: A stops before paying", async () => {
    const ag = await agent();
    const before = await usdcBalance(a, ag.agentAddress);
    const stalled = gate.hold("/a1", false);
    const first = pay(a, ag, "/a1");
    const resumeA = await stalled;
    pair.skew = 2 * LEASE_MS;
    const inFlight = gate.hold("/b1", true);
    const second = pay(b, ag, "/b1");
    const settleB = await inFlight; // B authorised its payment and sent it: in flight
    resumeA();
    const late = await first;
    expect(gate.events, "A paid while B's payment was in flight").to.not.include("/a1 paid in");
    expect(late.status, JSON.stringify(late.body)).to.equal(409);
    settleB();
    expect((await second).status).to.equal(200);
    expect(await usdcBalance(a, ag.agentAddress)).to.equal(before - USDC);
    const docs = await a.svc.store.payments.find({ agentAddress: ag.agentAddress }).toArray();
    expect(docs.map((d) => [d.intent, d.status])).to.deep.equal([["/b1", "approved"]]);
  });

  it("B takes the lock over from A stalled mid-payment: B waits for A's payment before starting its own", async () => {
    const ag = await agent();
    const inFlight = gate.hold("/a2", true);
    const first = pay(a, ag, "/a2");
    const settleA = await inFlight; // A committed, authorised and sent its payment, then stalled
    pair.skew = 2 * LEASE_MS;
    const logged = b.logs.length;
    const second = pay(b, ag, "/b2");
    // B either starts its own payment (asks the seller for a quote) or waits for A's: release A at whichever comes.
    await until(
      () => gate.events.includes("/b2 quote in") || b.logs.slice(logged).some((l) => l.includes("waiting for its payments in flight")),
    );
    settleA();
    expect((await first).status).to.equal(200);
    expect((await second).status).to.equal(200);
    const events = gate.events.filter((e) => e.startsWith("/a2 paid") || e.startsWith("/b2 quote"));
    expect(events.slice(0, 2)).to.deep.equal(["/a2 paid in", "/a2 paid out"]);
    const [docA, docB] = await Promise.all(
      ["/a2", "/b2"].map((intent) => a.svc.store.payments.findOne({ agentAddress: ag.agentAddress, intent })),
    );
    expect(docB!.createdAt.getTime()).to.be.at.least(docA!.updatedAt.getTime());
  });
});
