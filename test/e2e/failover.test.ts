/**
 * Failover in seconds (issue 27, item 2): instances A and B share one chain and one store, with the default leases
 * (LOCK_LEASE_MS 30 s, PAYMENT_LEASE_MS 180 s) and short heartbeats. A is stopped hard mid-payment: its heartbeat and
 * its work stop (its JSON-RPC call, or its seller, is held), nothing of its shutdown runs. B judges A dead by its stale
 * heartbeat and finishes the payment within seconds (not after the leases): it fences it on-chain first (voids an
 * unrecorded paymentId, releases an authorised one), so A, should it wake up, cannot pay it. A retry of A's request on B
 * with the same Idempotency-Key gets the final outcome, never a 409; the agent's next payment on B goes through.
 */
import { expect } from "chai";
import { randomOwner, type ApiResponse, type Stack } from "../helpers/stack";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { startRpcProxy, type RpcProxy } from "../../scripts/bench/rpcProxy";
import type { Facilitator } from "../../src/x402/facilitator";
import type { PaymentDoc } from "../../src/store/documents";
import { PaymentState } from "../../src/chain/reasons";

const USDC = 1_000_000n;
/** The bound on a killed instance's payments becoming final (the test's heartbeats are faster than the defaults). */
const FINAL_WITHIN_MS = 15_000;

async function until<T>(what: () => Promise<T | null | undefined | false>, ms = FINAL_WITHIN_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("failover: a dead instance's payments are fenced on-chain and finished by a live one within seconds", function () {
  this.timeout(120_000);
  let pair: TwoInstances;
  let rpc: RpcProxy;
  let seller: TestSeller;
  let a: Stack;
  let b: Stack;
  /** Holds the seller's settlement of the next paid request until let go (a seller A's payment reached, stalling). */
  let holdSettle: { arrived: () => void; go: Promise<void> } | null = null;
  let release: Array<() => void> = [];

  before(async () => {
    pair = await startTwoInstances({
      // A's held call must not time out on its own (then A, alive, would finish the payment itself).
      env: { HEARTBEAT_MS: "200", HEARTBEAT_STALE_MS: "1000", RPC_TIMEOUT_MS: "120000" },
      rpcForA: async (chain) => (rpc = await startRpcProxy(chain.rpcUrl)),
    });
    ({ a, b } = pair);
    const f = await fundedFacilitator(b);
    const gated: Facilitator = {
      verify: (p, r) => f.verify(p, r),
      settle: async (p, r) => {
        const hold = holdSettle;
        holdSettle = null;
        if (hold) {
          hold.arrived();
          await hold.go;
        }
        return f.settle(p, r);
      },
      supported: () => f.supported(),
    };
    seller = await startV2Seller({ facilitator: gated, usdc: b.svc.config.usdcAddress, price: USDC });
  });
  afterEach(async () => {
    for (const go of release) go();
    release = [];
    // A comes back to life for the next test (a stalled instance that beats again).
    if (!a.svc.heartbeats.running) await a.svc.heartbeats.start();
    await until(() => Promise.resolve(!b.svc.heartbeats.isDead("inst-a")));
  });
  after(async () => {
    for (const go of release) go();
    await seller?.close();
    await pair?.close();
  });

  async function agent() {
    const ag = await b.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "20", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(b, ag.agentAddress, 10n * USDC);
    return ag;
  }
  const pay = (s: Stack, ag: { agentAddress: string; apiKey: string }, intent: string, key: string) =>
    s.api("POST", "/pay", {
      key: ag.apiKey,
      headers: { "Idempotency-Key": key },
      body: { agentAddress: ag.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent },
    });
  const entry = (ag: { agentAddress: string }, intent: string) => b.svc.store.payments.findOne({ agentAddress: ag.agentAddress, intent });

  /** A is killed: its heartbeat stops (nothing of its shutdown runs; its payment is held where the test holds it). */
  async function killA(): Promise<number> {
    await a.svc.heartbeats.stop();
    return Date.now();
  }

  /** The payment becomes final on B within the bound; answers it and how long it took from the kill. */
  async function finalOnB(ag: { agentAddress: string }, intent: string, killedAt: number): Promise<{ doc: PaymentDoc; ms: number }> {
    const doc = await until(async () => {
      const d = await entry(ag, intent);
      return d?.phase === "done" ? d : null;
    });
    expect(doc.instanceId, "finished by B").to.equal("inst-b");
    return { doc, ms: Date.now() - killedAt };
  }

  function expectFinalNot409(res: ApiResponse) {
    expect(res.status, JSON.stringify(res.body)).to.not.equal(409);
    expect(res.body.retryable, JSON.stringify(res.body)).to.not.equal(true);
  }

  it("authorising, its transaction not yet sent: B voids the paymentId; A's late authorisation reverts and pays nothing", async () => {
    const ag = await agent();
    const before = await usdcBalance(b, ag.agentAddress);
    const paidRequests = seller.hits.paid;
    const held = rpc.holdNext("eth_sendRawTransaction");
    const answerA = pay(a, ag, "f-void", "f-key-void");
    const resumeA = await held;
    release.push(resumeA);
    const inFlight = (await entry(ag, "f-void"))!;
    expect(inFlight).to.include({ phase: "authorizing", authorizeTxHash: null, instanceId: "inst-a" });
    const killedAt = await killA();
    // The agent's caller retries on B with the same key at once: it waits for the outcome, never a 409.
    const retry = pay(b, ag, "f-void", "f-key-void");
    const { doc, ms } = await finalOnB(ag, "f-void", killedAt);
    expect(ms).to.be.below(FINAL_WITHIN_MS);
    expect(doc).to.include({ status: "failed", reason: "not_authorized" });
    expect(doc.voidTxHash, "fenced on-chain by a void").to.be.a("string");
    const again = await retry;
    expectFinalNot409(again);
    expect(again.headers.get("idempotent-replayed")).to.equal("true");
    // A wakes up: its authorisation goes out now and reverts (the paymentId is voided); nothing is paid.
    resumeA();
    const late = await answerA;
    expect(late.status).to.not.equal(200);
    expect(await usdcBalance(b, ag.agentAddress)).to.equal(before);
    expect(seller.hits.paid).to.equal(paidRequests);
    // The agent pays again on B at once (its lock was A's).
    const next = await pay(b, ag, "f-void-next", "f-key-void-next");
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
    expect(await usdcBalance(b, ag.agentAddress)).to.equal(before - USDC);
  });

  it("authorised on-chain, A not yet told: B releases it; the agent's next payment on B takes A's lock and pays", async () => {
    const ag = await agent();
    const before = await usdcBalance(b, ag.agentAddress);
    const held = rpc.holdNext("eth_getTransactionReceipt");
    const answerA = pay(a, ag, "f-release", "f-key-release");
    const resumeA = await held;
    release.push(resumeA);
    // Mined, and A not told: on a node that mines at once the hash goes on the entry with the authorised mark
    // (authorize.ts), which A, its receipt held, has not written; on any other its note comes first.
    const inFlight = await until(async () => {
      const d = await entry(ag, "f-release");
      const mined =
        d?.paymentId && (await b.svc.services.payments.ops.paymentState(d.policyAddress, d.paymentId)) === PaymentState.Authorized;
      return mined ? d : null;
    });
    expect(inFlight).to.include({ phase: "authorizing", instanceId: "inst-a" });
    const killedAt = await killA();
    // A new payment of the same agent on B: A's agent lock (30 s lease) passes at once, and A's payment is finished first.
    const next = await pay(b, ag, "f-release-next", "f-key-release-next");
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
    const { doc, ms } = await finalOnB(ag, "f-release", killedAt);
    expect(ms).to.be.below(FINAL_WITHIN_MS);
    expect(doc).to.include({ status: "failed" });
    expect(doc.releaseTxHash, "fenced on-chain by a release").to.be.a("string");
    const retry = await pay(b, ag, "f-release", "f-key-release");
    expectFinalNot409(retry);
    resumeA();
    await answerA;
    expect(await usdcBalance(b, ag.agentAddress), "only the next payment was paid").to.equal(before - USDC);
  });

  it("sent to the seller, which stalls before settling: B releases it, and the seller's late settlement cannot pay", async () => {
    const ag = await agent();
    const before = await usdcBalance(b, ag.agentAddress);
    const settled = seller.settlements.length;
    let go!: () => void;
    const arrived = new Promise<void>((arrive) => (holdSettle = { arrived: arrive, go: new Promise<void>((r) => (go = r)) }));
    release.push(() => go());
    const answerA = pay(a, ag, "f-sent", "f-key-sent");
    await arrived;
    expect(await entry(ag, "f-sent")).to.include({ phase: "authorized", instanceId: "inst-a" });
    const killedAt = await killA();
    const { doc, ms } = await finalOnB(ag, "f-sent", killedAt);
    expect(ms).to.be.below(FINAL_WITHIN_MS);
    expect(doc).to.include({ status: "failed" });
    expect(doc.releaseTxHash).to.be.a("string");
    go(); // the seller settles now: the wallet refuses the released authorisation
    const late = await answerA;
    expect(late.status).to.not.equal(200);
    expect(seller.settlements).to.have.length(settled);
    const retry = await pay(b, ag, "f-sent", "f-key-sent");
    expectFinalNot409(retry);
    expect(await usdcBalance(b, ag.agentAddress)).to.equal(before);
  });

  it("a stalled peer that beats again is alive again: B leaves its next payment alone", async () => {
    const ag = await agent();
    const res = await pay(a, ag, "f-alive", "f-key-alive");
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(b.svc.heartbeats.isDead("inst-a")).to.equal(false);
  });
});
