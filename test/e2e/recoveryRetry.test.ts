/**
 * A recovery that fails is tried again within seconds (issue 27, npm run chaos: keys answered 409 "still in flight on
 * another instance" for minutes). Instance A dies mid-payment; B takes the payment over while its own JSON-RPC is out
 * of reach, so the fencing void cannot be sent. The claim must not keep the payment for PAYMENT_LEASE_MS (180 s, the
 * default): once the chain is back, the payment is final within seconds, its key answers with that outcome and the
 * agent pays again. Real chain, store, x402 seller and HTTP; B's chain is cut at a TCP pass-through, A is stopped by
 * its heartbeat and a JSON-RPC send held at the bench's proxy.
 */
import { expect } from "chai";
import { randomOwner, type Stack } from "../helpers/stack";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { startTcpProxy, type TcpProxy } from "../helpers/tcpProxy";
import { startRpcProxy, type RpcProxy } from "../../scripts/bench/rpcProxy";

const USDC = 1_000_000n;

async function until<T>(what: () => Promise<T | null | undefined | false>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("recovery retry: a take-over that failed while the chain was down finishes within seconds of its return", function () {
  this.timeout(120_000);
  let pair: TwoInstances;
  let rpcA: RpcProxy;
  let rpcB: TcpProxy;
  let seller: TestSeller;
  let a: Stack;
  let b: Stack;
  let resumeA: () => void = () => undefined;

  before(async () => {
    pair = await startTwoInstances({
      // The default PAYMENT_LEASE_MS (180 s); A's held call must not time out on its own.
      env: { HEARTBEAT_MS: "200", HEARTBEAT_STALE_MS: "1000", RPC_TIMEOUT_MS: "120000" },
      rpcForA: async (chain) => (rpcA = await startRpcProxy(chain.rpcUrl)),
      rpcForB: async (chain) => {
        const u = new URL(chain.rpcUrl);
        rpcB = await startTcpProxy(u.hostname, Number(u.port));
        return `http://${rpcB.host}:${rpcB.port}`;
      },
    });
    ({ a, b } = pair);
    seller = await startV2Seller({ facilitator: await fundedFacilitator(a), usdc: b.svc.config.usdcAddress, price: USDC });
  });
  after(async () => {
    resumeA();
    await rpcB?.start().catch(() => undefined);
    await seller?.close();
    await pair?.close();
    await rpcB?.stop();
  });

  it("B's claim is given back when its void cannot be sent; the chain back, the payment is failed in seconds, not after the lease", async () => {
    const ag = await a.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "20", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, ag.agentAddress, 10n * USDC);
    const before = await usdcBalance(a, ag.agentAddress);
    const pay = (s: Stack, intent: string, key: string) =>
      s.api("POST", "/pay", {
        key: ag.apiKey,
        headers: { "Idempotency-Key": key },
        body: { agentAddress: ag.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent },
      });
    // A signs the authorisation and stalls before the chain sees it; then it dies (its heartbeat stops).
    const held = rpcA.holdNext("eth_sendRawTransaction");
    const answerA = pay(a, "r-1", "r-key-1");
    resumeA = await held;
    const doc = (await b.svc.store.payments.findOne({ agentAddress: ag.agentAddress, intent: "r-1" }))!;
    expect(doc).to.include({ phase: "authorizing", authorizeTxHash: null, instanceId: "inst-a" });
    await rpcB.stop();
    await a.svc.heartbeats.stop();
    // B judges A dead and claims the payment; its void cannot reach the chain.
    await until(async () => {
      const d = await b.svc.store.payments.findOne({ txnId: doc.txnId });
      return d?.instanceId === "inst-b" && d.phase === "authorizing";
    }, 15_000);
    await new Promise((r) => setTimeout(r, 1_000)); // B's failed attempt has ended
    expect(await b.svc.store.payments.findOne({ txnId: doc.txnId })).to.include({ phase: "authorizing" });

    await rpcB.start();
    const back = Date.now();
    const done = await until(async () => {
      const d = await b.svc.store.payments.findOne({ txnId: doc.txnId });
      return d?.phase === "done" ? d : null;
    }, 15_000);
    expect(Date.now() - back, "final within seconds of the chain's return").to.be.below(15_000);
    expect(done).to.include({ status: "failed", reason: "not_authorized" });
    expect(done.voidTxHash, "fenced on-chain by a void").to.be.a("string");
    // The key answers with the outcome (no 409), and the agent pays again on B.
    const retry = await pay(b, "r-1", "r-key-1");
    expect(retry.status, JSON.stringify(retry.body)).to.equal(502);
    expect(retry.body.retryable, JSON.stringify(retry.body)).to.not.equal(true);
    expect(retry.headers.get("idempotent-replayed")).to.equal("true");
    const next = await pay(b, "r-2", "r-key-2");
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
    resumeA();
    expect((await answerA).status).to.not.equal(200);
    expect(await usdcBalance(b, ag.agentAddress), "only the next payment was paid").to.equal(before - USDC);
  });
});
