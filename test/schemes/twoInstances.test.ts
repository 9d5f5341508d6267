/**
 * One channel paid through two instances on one chain and one store. Each instance keeps a copy of the channels it paid
 * through (src/payments/schemes/channelCopies.ts), so a voucher needs no read before its first write; a copy the other instance
 * moved past must fail that write and the payment start again from the store: never a voucher signed from the stale
 * copy (a repeated cumulative, a fork of the sequence), never a payment refused for it.
 */
import { expect } from "chai";
import { idempotencyCaller, idempotencyScope, requestHashOf } from "../../src/payments/idempotency";
import { pay, payOnce } from "../../src/payments/pay";
import { Wallet } from "ethers";
import { mintUsdc } from "../helpers/sellers";
import { ownerKey } from "../helpers/owner";
import { randomOwner } from "../helpers/stack";
import { startBatchSeller, stockSchemeFacilitator, type BatchSeller } from "../helpers/schemeSellers";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { expectAuditClean, storedChannel } from "./fixture";

const PRICE = 1_000n;

describe("a channel paid through two instances", () => {
  let two: TwoInstances;
  let seller: BatchSeller;

  before(async () => {
    two = await startTwoInstances({ env: { CHANNEL_DEPOSIT_REQUESTS: "20" } });
    const key = Wallet.createRandom();
    await two.a.svc.chain.provider.send("hardhat_setBalance", [key.address, `0x${(10n ** 21n).toString(16)}`]);
    const facilitator = stockSchemeFacilitator(two.a.svc.config.rpcUrl, key.privateKey);
    seller = await startBatchSeller({ facilitator: facilitator.client, usdc: two.a.svc.config.usdcAddress, price: PRICE });
  });

  /** POST /pay for `agent` to the seller, through the instance given. */
  const payer = (agent: { apiKey: string; agentAddress: string }) => (via: TwoInstances["a"]) =>
    via.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "0.01", intent: "two instances" },
    });

  after(async () => {
    await seller?.close();
    await two?.close();
  });

  it("takes turns on one voucher sequence: a copy the other instance moved past is read again, not used", async () => {
    const { a: A, b: B } = two;
    const agent = await A.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(A, agent.agentAddress, 10_000_000n);
    const payVia = payer(agent);
    const stored = async () => (await A.svc.store.channels.findOne({ agentAddress: agent.agentAddress }))!;
    const copyIn = (s: typeof A, channelId: string) => s.svc.services.payments.room.channelCopies.get(channelId);

    const cumulatives: string[] = [];
    for (const via of [A, B, A, A, B, A, B]) {
      const before = await stored().catch(() => null);
      // Where this instance paid before and the other one since, its copy is behind the store's channel.
      const copy = before ? copyIn(via, before.channelId) : undefined;
      if (copy && before) expect(copy.version <= before.version).to.equal(true);
      const r = await payVia(via);
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      cumulatives.push(r.body.channel.cumulative as string);
    }
    // One sequence: every voucher one price above the last, no cumulative twice.
    expect(cumulatives).to.deep.equal(["0.001", "0.002", "0.003", "0.004", "0.005", "0.006", "0.007"]);
    const channel = await stored();
    expect(await storedChannel(A, agent.agentAddress)).to.include({ charged: (7n * PRICE).toString(), signed: (7n * PRICE).toString() });
    expect(channel.deposits).to.have.length(1);
    // A's copy is behind now (B paid last): it is used, fails its first write, and A pays from the store's channel.
    expect(copyIn(A, channel.channelId)!.version).to.be.below(channel.version);
    const again = await payVia(A);
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body.channel.cumulative).to.equal("0.008");
    expect(copyIn(A, channel.channelId)!.version).to.equal((await stored()).version);

    // Closed through B: A's copy still says open, and A's next payment deposits anew instead of signing a voucher.
    const closed = await B.api("POST", `/agents/${agent.agentAddress}/channels/${channel.channelId}/close`, { key: agent.apiKey });
    expect(closed.status, JSON.stringify(closed.body)).to.equal(200);
    expect(copyIn(A, channel.channelId)!.status).to.equal("open");
    const reopened = await payVia(A);
    expect(reopened.status, JSON.stringify(reopened.body)).to.equal(200);
    const after = await stored();
    expect(after.status).to.equal("open");
    expect(after.deposits).to.have.length(2);
    await expectAuditClean(A, agent.apiKey);
  });

  it("a copy that shows the channel spent is not trusted with a deposit: the store's channel, topped up by the other instance, pays a voucher", async () => {
    const { a: A, b: B } = two;
    // Deposits of 20 requests (0.02); the day's budget holds two of them and nothing more.
    const agent = await A.onboard(randomOwner(), {
      allowlist: ["127.0.0.1"],
      dailyBudget: "0.04",
      perTxLimit: "0.03",
      approvalThreshold: "0.03",
    });
    await mintUsdc(A, agent.agentAddress, 10_000_000n);
    const payVia = payer(agent);
    for (let i = 0; i < 20; i++) expect((await payVia(A)).status).to.equal(200);
    // B tops the channel up (0.02 more: the budget is spent); A's copy still shows it spent.
    const topUp = await payVia(B);
    expect(topUp.status, JSON.stringify(topUp.body)).to.equal(200);
    const channel = await storedChannel(A, agent.agentAddress);
    expect(channel).to.include({ balance: "40000", charged: "21000" });
    expect(A.svc.services.payments.room.channelCopies.get(channel.channelId)).to.include({ balance: "20000", charged: "20000" });
    // A deposit decided on A's copy would be blocked (daily_budget_exceeded, recorded on-chain): the channel pays it.
    const next = await payVia(A);
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
    expect(next.body.channel.cumulative).to.equal("0.022");
    expect((await A.svc.store.channels.findOne({ channelId: channel.channelId }))!.deposits).to.have.length(2);
    await expectAuditClean(A, agent.apiKey);
  });

  it("a pause relayed by one instance stops the other's next voucher, with no indexer to tell it", async () => {
    const { a: A, b: B } = two;
    await A.svc.indexer.stop();
    await B.svc.indexer.stop();
    const owner = randomOwner();
    const agent = await A.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(A, agent.agentAddress, 10_000_000n);
    const payVia = payer(agent);
    for (let i = 0; i < 2; i++) expect((await payVia(A)).status).to.equal(200);
    // The agent's document as a request that then waited (for its Idempotency-Key, say) read it: before the pause.
    const readBefore = (await A.svc.store.agents.findOne({ address: agent.agentAddress }))!;
    // A holds the policy in its cache now; B relays the owner's pause.
    const timestamp = B.now();
    const { signature, epoch } = await B.signPause(owner, agent.agentAddress, true, timestamp);
    const paused = await B.api("POST", `/agents/${agent.agentAddress}/pause`, {
      key: await ownerKey(B, owner),
      body: { paused: true, epoch, humanSignature: signature, timestamp },
    });
    expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
    const served = seller.served;
    // A payment starting a minute after its document was read reads it again, and the pause's mark with it.
    const request = {
      agentAddress: agent.agentAddress,
      serviceUrl: seller.resource,
      maxAmount: "0.01",
      intent: "two instances",
      method: "GET" as const,
    };
    // The same document given to a request that then waits for its Idempotency-Key (held by an instance that stopped):
    // the wait counts towards its age, so the payment reads it again once it runs (it was not: a stale admission then
    // sent a voucher the wallet refuses).
    const room = A.svc.services.payments.room;
    const principal = { role: "agent" as const, agentAddress: agent.agentAddress, keyPrefix: agent.apiKey.slice(0, 9) };
    const scope = idempotencyScope(idempotencyCaller(principal), "paused-while-waiting");
    const now = Date.now();
    await A.svc.store.idempotency.insertOne({
      scope,
      requestHash: requestHashOf(request),
      state: "in_progress",
      response: null,
      holder: "a-stopped-instance",
      leaseUntil: new Date(now + 200),
      fence: 1,
      txnId: null,
      createdAt: new Date(now),
      expiresAt: new Date(now + 86_400_000),
    });
    const waited = await payOnce(room, principal, Promise.resolve(readBefore), request, "paused-while-waiting");
    expect("outcome" in waited && waited.outcome.status === "blocked" && waited.outcome.reason, JSON.stringify(waited)).to.equal(
      "policy_paused",
    );
    expect(seller.served).to.equal(served);
    // A document read a minute ago (the reader's read began, and ended, then).
    const stale = Object.assign(() => Promise.resolve({ doc: readBefore, at: performance.now() - 60_000 }), { started: () => true });
    const late = await pay(A.svc.services.payments.room, stale, request);
    expect(late.kind === "blocked" && late.outcome.reason, JSON.stringify(late)).to.equal("policy_paused");
    const refused = await payVia(A);
    expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
    expect(refused.body.reason).to.equal("policy_paused");
    expect(seller.served).to.equal(served);
  });
});
