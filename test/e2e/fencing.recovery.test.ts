/**
 * The payment lease's window: instance A committed a payment and signed its authorisation, then stalled before the
 * chain saw it, for longer than PAYMENT_LEASE_MS; B's recovery claims the payment. Recovery voids the paymentId
 * on-chain (voidUnrecordedPayment) and calls the payment failed at once: A's authorisation, should it come after all,
 * reverts. Where no void can be sent, recovery must not call it failed while A can still authorise and pay it, that is
 * until the chain passes the transfer's validBefore (the contract then refuses it). A's stall is played by holding its
 * eth_sendRawTransaction at the bench's JSON-RPC proxy; recovery's clock is injected, and B's lease clock moved past
 * A's leases, as B sees them when A stops renewing.
 */
import { expect } from "chai";
import { randomOwner, type Stack } from "../helpers/stack";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { startRpcProxy, type RpcProxy } from "../../scripts/bench/rpcProxy";

const USDC = 1_000_000n;
const LEASE_MS = 5_000;
const PAYMENT_LEASE_MS = 180_000;

describe("fencing: recovery never calls a payment failed while a stalled instance can still pay it", function () {
  this.timeout(120_000);
  let pair: TwoInstances;
  let rpc: RpcProxy;
  let seller: TestSeller;
  let a: Stack;
  let b: Stack;

  before(async () => {
    pair = await startTwoInstances({
      env: { LOCK_LEASE_MS: String(LEASE_MS), PAYMENT_LEASE_MS: String(PAYMENT_LEASE_MS) },
      rpcForA: async (chain) => (rpc = await startRpcProxy(chain.rpcUrl)),
    });
    ({ a, b } = pair);
    seller = await startV2Seller({ facilitator: await fundedFacilitator(b), usdc: b.svc.config.usdcAddress, price: USDC });
  });
  /** A's held send, let go after a failed test too (else A's answer, and closing A, would wait for good). */
  let resumeA: () => void = () => undefined;
  afterEach(() => {
    resumeA();
    pair.skew = 0;
  });
  after(async () => {
    await seller?.close();
    await pair?.close();
  });

  async function agent() {
    const ag = await b.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "20", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(b, ag.agentAddress, 10n * USDC);
    return ag;
  }
  const pay = (s: Stack, ag: { agentAddress: string; apiKey: string }, intent: string, key?: string) =>
    s.api("POST", "/pay", {
      key: ag.apiKey,
      headers: key ? { "Idempotency-Key": key } : {},
      body: { agentAddress: ag.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent },
    });
  /** A starts paying and stalls with its authorisation signed, before the chain has seen it. */
  async function stallA(ag: { agentAddress: string; apiKey: string }, intent: string, key?: string) {
    const held = rpc.holdNext("eth_sendRawTransaction");
    const answer = pay(a, ag, intent, key);
    const resume = (resumeA = await held);
    const doc = (await b.svc.store.payments.findOne({ agentAddress: ag.agentAddress, intent }))!;
    expect(doc).to.include({ phase: "authorizing", authorizeTxHash: null, instanceId: "inst-a" });
    pair.skew = 2 * LEASE_MS; // A's leases have run out, as B sees them
    return { answer, resume, doc };
  }
  const recoverPastLease = () => b.svc.services.payments.recover(new Date(Date.now() + PAYMENT_LEASE_MS + 1_000));

  const spentToday = (agentAddress: string) => b.svc.chain.policyAt(agentAddress, b.svc.chain.provider).spentToday();

  it("voids the stalled payment at once: failed, its key answers, the agent pays again, and A's late authorisation reverts", async () => {
    const ag = await agent();
    const before = await usdcBalance(b, ag.agentAddress);
    const { answer, resume, doc } = await stallA(ag, "w3-1", "w3-key-1");
    const gasOf = async () => (await b.svc.store.collection("gasUsage").findOne({ ownerAddress: doc.ownerAddress }))?.transactions ?? 0;
    const transactions = await gasOf();
    await recoverPastLease(); // the chain's clock is still far before validBefore
    expect(await gasOf(), "the void is charged to the owner").to.equal(transactions + 1);
    const voided = await b.svc.store.payments.findOne({ txnId: doc.txnId });
    expect(voided).to.include({ status: "failed", phase: "done", reason: "not_authorized" });
    expect(voided!.voidTxHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(await b.svc.services.payments.ops.paymentState(ag.agentAddress, doc.paymentId!)).to.equal(2);
    const retry = await pay(b, ag, "w3-1", "w3-key-1");
    expect(retry.status, JSON.stringify(retry.body)).to.equal(502);
    expect(retry.headers.get("idempotent-replayed")).to.equal("true");
    const next = await pay(b, ag, "w3-1b");
    expect(next.status, JSON.stringify(next.body)).to.equal(200);

    resume();
    const late = await answer;
    expect(late.status, JSON.stringify(late.body)).to.equal(502);
    expect(await b.svc.services.payments.ops.paymentState(ag.agentAddress, doc.paymentId!)).to.equal(2);
    expect(await b.svc.store.payments.findOne({ txnId: doc.txnId })).to.include({
      status: "failed",
      phase: "done",
      reason: "not_authorized",
    });
    expect(await b.svc.store.payments.countDocuments({ agentAddress: ag.agentAddress, intent: "w3-1" })).to.equal(1);
    expect(await usdcBalance(b, ag.agentAddress)).to.equal(before - USDC);
    expect(await spentToday(ag.agentAddress)).to.equal(USDC);
  });

  // Last: it moves the chain's clock ahead.
  // No block is mined after the clock moves: a chain that mines only on transactions makes none once traffic stops, and
  // recovery judges by the time the node gives its next block (before, by the latest block's: the payment stayed
  // "processing" for good and its agent's later payments answered 409).
  // B's operator is left without gas to play a void that cannot be sent (a node that refuses it, or a policy
  // implementation from before voidUnrecordedPayment).
  it("without a void: in flight before validBefore; past it by the node's clock, with no block since, failed; the stalled authorisation is refused", async () => {
    const ag = await agent();
    const before = await usdcBalance(b, ag.agentAddress);
    const { answer, resume, doc } = await stallA(ag, "w3-2");
    const provider = b.svc.chain.provider;
    const operatorB = b.svc.chain.operator.address;
    const gas = await provider.getBalance(operatorB);
    await provider.send("hardhat_setBalance", [operatorB, "0x0"]);
    try {
      await recoverPastLease();
      expect(await b.svc.store.payments.findOne({ txnId: doc.txnId }), "while A could still pay").to.include({ status: "processing" });
      const latest = (await provider.getBlock("latest"))!;
      await provider.send("evm_increaseTime", [doc.validBefore! - latest.timestamp + 1]);
      await recoverPastLease();
    } finally {
      await provider.send("hardhat_setBalance", [operatorB, "0x" + gas.toString(16)]);
    }
    const failed = await b.svc.store.payments.findOne({ txnId: doc.txnId });
    expect(failed).to.include({ status: "failed", phase: "done", reason: "not_authorized" });
    expect(failed!.voidTxHash ?? null).to.equal(null);
    resume();
    const late = await answer;
    expect(late.status, JSON.stringify(late.body)).to.equal(502);
    expect(await b.svc.services.payments.ops.paymentState(ag.agentAddress, doc.paymentId!)).to.equal(0);
    expect(await usdcBalance(b, ag.agentAddress)).to.equal(before);
  });
});
