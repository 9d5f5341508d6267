import { expect } from "chai";
import { stackPerFile, randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { withSeller, stackSeller, mintUsdc, startMisbehavingSeller } from "../helpers/sellers";
import { startReceiver, type ReceivedRequest, type Receiver } from "../helpers/receiver";
import { WEBHOOK_EVENT_TYPES } from "../../src/schemas/webhooks";
import { alertPaymentDone, catchUpAlerts, reachedLevels } from "../../src/services/alerts";

const USDC = 1_000_000n;

describe("webhook events: each fact told once, from where it is decided, to the owner's subscribed endpoints", () => {
  const { s, keep, seller } = withSeller(
    stackPerFile({ WEBHOOK_TIMEOUT_MS: "500", WEBHOOK_BACKOFF_BASE_MS: "20", WEBHOOK_POLL_MS: "50" }),
    USDC,
  );
  let receiver: Receiver;

  before(async () => {
    receiver = await startReceiver();
    keep(receiver);
  });

  /** An owner with an endpoint (receiver URL + `?tag`) subscribed to `events`. */
  async function ownerWithEndpoint(events: readonly string[] = WEBHOOK_EVENT_TYPES) {
    const owner = randomOwner();
    const key = await ownerKey(s, owner);
    const tag = owner.address.toLowerCase();
    const res = await s.api("POST", "/webhooks", { key, body: { url: `${receiver.url}?${tag}`, events } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    // What this endpoint received (each endpoint's URL carries its owner's address).
    return { owner, key, endpoint: res.body.id as string, seen: () => receiver.requests.filter((r) => r.path.endsWith(`?${tag}`)) };
  }
  async function onboard(owner: ReturnType<typeof randomOwner>, policy: Parameters<Stack["onboard"]>[1] = {}) {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
    await mintUsdc(s, a.agentAddress, 100n * USDC);
    return a;
  }
  const pay = (a: { agentAddress: string; apiKey: string }, url = seller.resource) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: url, maxAmount: "5", intent: "events test" },
    });
  /** Five payments of `a`, each approved (200): their transaction ids. */
  async function paidFiveTimes(a: { agentAddress: string; apiKey: string }): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await pay(a);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      ids.push(res.body.transactionId);
    }
    return ids;
  }
  const ofType = (rs: ReceivedRequest[], type: string) => rs.filter((r) => r.body.type === type);

  it("payment.approved for each payment, budget.threshold at 80% and 100% of the day once each, then payment.blocked", async () => {
    const o = await ownerWithEndpoint(["payment.approved", "payment.blocked", "budget.threshold"]);
    const a = await onboard(o.owner, { dailyBudget: "5", perTxLimit: "5", approvalThreshold: "5" });
    const ids = await paidFiveTimes(a);
    const blocked = await pay(a);
    expect(blocked.status).to.equal(422);
    // The same refusal again within 60 s shares the first one's on-chain record and its alert.
    const again = await pay(a);
    expect(again.status).to.equal(422);
    expect((await s.svc.store.payments.findOne({ txnId: again.body.transactionId }))?.duplicateOf).to.equal(blocked.body.transactionId);
    await receiver.until(() => ofType(o.seen(), "payment.blocked").length === 1 && ofType(o.seen(), "budget.threshold").length === 2);
    const approved = ofType(o.seen(), "payment.approved");
    expect(approved.map((r) => r.body.data.id).sort()).to.deep.equal([...ids].sort());
    expect(approved[0].body.data).to.include({
      agentAddress: a.agentAddress,
      status: "approved",
      amount: "1",
      merchant: "127.0.0.1",
      intent: "events test",
    });
    const thresholds = ofType(o.seen(), "budget.threshold").map((r) => r.body.data);
    expect(thresholds.map((t) => t.level)).to.deep.equal([80, 100]);
    expect(thresholds[0]).to.include({
      agentAddress: a.agentAddress,
      window: "daily",
      spent: "4",
      budget: "5",
      remaining: "1",
      transactionId: ids[3],
    });
    expect(thresholds[1]).to.include({ spent: "5", remaining: "0", transactionId: ids[4] });
    expect(thresholds[0].period).to.match(/^\d{4}-\d{2}-\d{2}$/);
    const b = ofType(o.seen(), "payment.blocked")[0].body.data;
    expect(b).to.include({ id: blocked.body.transactionId, status: "blocked", reason: "daily_budget_exceeded" });
    const sentinel = await s.api("POST", `/webhooks/${o.endpoint}/test`, { key: o.key });
    await receiver.until((r) => r.some((x) => x.body.id === sentinel.body.eventId));
    expect(ofType(o.seen(), "payment.blocked")).to.have.length(1);
    // Telling a fact again queues nothing: the dedupe key is the payment's.
    const events = await s.svc.webhooks.outbox.c.events.countDocuments({ ownerAddress: o.owner.address });
    for (const id of [...ids, blocked.body.transactionId]) await alertPaymentDone(s.svc.services.ctx, id);
    expect(await s.svc.webhooks.outbox.c.events.countDocuments({ ownerAddress: o.owner.address })).to.equal(events);
  });

  it("budget.threshold for every limited window: a weekly cap under the daily budget is announced at 80% and 100%", async () => {
    const o = await ownerWithEndpoint(["budget.threshold", "payment.blocked"]);
    const a = await onboard(o.owner, { dailyBudget: "10", weeklyBudget: "5", perTxLimit: "5", approvalThreshold: "5" });
    const ids = await paidFiveTimes(a);
    const blocked = await pay(a);
    expect(blocked.body).to.include({ status: "blocked", reason: "weekly_budget_exceeded" });
    await receiver.until(() => ofType(o.seen(), "payment.blocked").length === 1 && ofType(o.seen(), "budget.threshold").length === 2);
    const thresholds = ofType(o.seen(), "budget.threshold").map((r) => r.body.data);
    // The day (5 of 10) never reached 80%; the week did, once per level.
    expect(thresholds.map((t) => [t.window, t.level])).to.deep.equal([
      ["weekly", 80],
      ["weekly", 100],
    ]);
    expect(thresholds[0]).to.include({ spent: "4", budget: "5", remaining: "1", transactionId: ids[3] });
    expect(thresholds[1]).to.include({ spent: "5", remaining: "0", transactionId: ids[4] });
    // The period is the start of the fixed UTC week the contract counts in (weeks of the Unix epoch).
    expect(Date.parse(thresholds[0].period) % (7 * 86_400_000)).to.equal(0);
    // Telling these payments again (the catch-up sweep does) queues nothing and counts nothing.
    for (const id of ids) expect(await alertPaymentDone(s.svc.services.ctx, id)).to.equal(0);
  });

  it("budget levels are computed over any list of windows (any window, any budget)", () => {
    const w = (spent: bigint, budget: bigint) => ({ name: "weekly", id: "2026-W48", spent, budget });
    expect(reachedLevels(w(79n, 100n))).to.deep.equal([]);
    expect(reachedLevels(w(80n, 100n))).to.deep.equal([80]);
    expect(reachedLevels(w(99n, 100n))).to.deep.equal([80]);
    expect(reachedLevels(w(100n, 100n))).to.deep.equal([80, 100]);
    expect(reachedLevels(w(0n, 0n))).to.deep.equal([]);
  });

  it("payment.failed when the seller does not settle (the budget was released)", async () => {
    const o = await ownerWithEndpoint(["payment.failed", "payment.approved"]);
    const a = await onboard(o.owner);
    const bad = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, price: USDC });
    keep(bad);
    const res = await pay(a, bad.resource);
    expect(res.status).to.equal(502);
    const [failed] = ofType(await receiver.until(() => ofType(o.seen(), "payment.failed").length === 1), "payment.failed").filter(
      (r) => r.body.data.agentAddress === a.agentAddress,
    );
    expect(failed.body.data).to.include({ status: "failed", reason: "settlement_failed", amount: "1" });
    expect(failed.body.data.releaseTxHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(ofType(o.seen(), "payment.approved")).to.have.length(0);
  });

  it("approval.requested, then approval.expired once; only to the owner's endpoints subscribed to the type", async () => {
    const o = await ownerWithEndpoint(["approval.requested", "approval.expired"]);
    const paymentsOnly = await s.api("POST", "/webhooks", {
      key: o.key,
      body: { url: `${receiver.url}?other`, events: ["payment.approved"] },
    });
    const stranger = await ownerWithEndpoint();
    const a = await onboard(o.owner, { approvalThreshold: "0.5" });
    const res = await pay(a);
    expect(res.status).to.equal(202);
    await receiver.until(() => ofType(o.seen(), "approval.requested").length === 1);
    const later = new Date(Date.now() + (s.svc.config.approvalTtlSeconds + 1) * 1000);
    expect(await s.svc.services.approvals.expire(later)).to.be.greaterThan(0);
    expect(await s.svc.services.approvals.expire(later)).to.equal(0);
    const [expired] = ofType(await receiver.until(() => ofType(o.seen(), "approval.expired").length === 1), "approval.expired");
    expect(expired.body.data).to.include({
      approvalId: res.body.approvalId,
      agentAddress: a.agentAddress,
      amount: "1",
      transactionId: res.body.transactionId,
    });
    const other = await s.api("GET", `/webhooks/${paymentsOnly.body.id}/deliveries`, { key: o.key });
    expect(other.body.total).to.equal(0);
    const strangers = await s.api("GET", `/webhooks/${stranger.endpoint}/deliveries`, { key: stranger.key });
    expect(strangers.body.total).to.equal(0);
  });

  it("a fact whose alert a crash lost (the instance stopped after answering) is told by the catch-up sweep, once", async () => {
    const o = await ownerWithEndpoint(["payment.approved", "approval.requested"]);
    const a = await onboard(o.owner, { approvalThreshold: "1.5" });
    const since = new Date(Date.now() - 1_000);
    const outbox = s.svc.webhooks.outbox;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be put back on the same object
    const later = outbox.later;
    outbox.later = () => undefined; // the work queued after the answer never runs: the process died
    let paid, pending;
    try {
      paid = await pay(a);
      expect(paid.status).to.equal(200);
    } finally {
      outbox.later = later;
    }
    const bigger = await stackSeller(s, 2n * USDC);
    keep(bigger);
    outbox.later = () => undefined;
    try {
      pending = await pay(a, bigger.resource);
      expect(pending.status).to.equal(202);
    } finally {
      outbox.later = later;
    }
    expect(await outbox.c.events.countDocuments({ ownerAddress: o.owner.address })).to.equal(0);
    expect(await catchUpAlerts(s.svc.services.ctx, since)).to.equal(2);
    await receiver.until(() => ofType(o.seen(), "payment.approved").length === 1 && ofType(o.seen(), "approval.requested").length === 1);
    expect(ofType(o.seen(), "payment.approved")[0].body.data.id).to.equal(paid.body.transactionId);
    expect(ofType(o.seen(), "approval.requested")[0].body.data.approvalId).to.equal(pending.body.approvalId);
    expect(await catchUpAlerts(s.svc.services.ctx, since)).to.equal(0);
  });

  it("policy.updated and agent.paused from confirmed chain events, exactly once even when the indexer reads the blocks again", async () => {
    const o = await ownerWithEndpoint(["policy.updated", "agent.paused"]);
    const a = await onboard(o.owner);
    const { signature, timestamp } = await s.signPause(o.owner, a.agentAddress, true);
    const pause = await s.api("POST", `/agents/${a.agentAddress}/pause`, {
      key: o.key,
      body: { paused: true, humanSignature: signature, timestamp },
    });
    expect(pause.status, JSON.stringify(pause.body)).to.equal(200);
    await s.svc.indexer.syncOnce();
    await receiver.until(() => ofType(o.seen(), "policy.updated").length === 1 && ofType(o.seen(), "agent.paused").length === 1);
    const policy = ofType(o.seen(), "policy.updated")[0].body.data;
    expect(policy).to.include({ agentAddress: a.agentAddress });
    expect(policy.policy).to.include({ dailyBudget: "20000000", perTxLimit: "5000000" });
    expect(ofType(o.seen(), "agent.paused")[0].body.data).to.include({
      agentAddress: a.agentAddress,
      paused: true,
      txHash: pause.body.txHash,
    });

    // A restart that re-reads every block, after a crash between the alert and the event's confirmation.
    const chainId = s.svc.config.chainId;
    await s.svc.store.chainEvents.updateMany({ agentAddress: a.agentAddress }, { $set: { confirmed: false } });
    await s.svc.store.indexerState.updateMany({ chainId }, { $set: { nextBlock: s.svc.config.factoryDeployBlock } });
    await s.svc.indexer.syncOnce();
    expect(await s.svc.store.chainEvents.countDocuments({ agentAddress: a.agentAddress, confirmed: false })).to.equal(0);
    const test = await s.api("POST", `/webhooks/${o.endpoint}/test`, { key: o.key });
    await receiver.until((r) => r.some((x) => x.body.id === test.body.eventId)); // anything queued before it has been sent
    expect(ofType(o.seen(), "policy.updated")).to.have.length(1);
    expect(ofType(o.seen(), "agent.paused")).to.have.length(1);
  });
});
