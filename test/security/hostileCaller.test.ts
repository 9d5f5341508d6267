/**
 * A hostile agent, owner or seller against the running service (real chain, store, HTTP and x402): bad input, races
 * and lies are clear answers in the error shape, never a 500, and cost the operator nothing it does not meter.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";
import { mintUsdc, startMisbehavingSeller } from "../helpers/sellers";
import { ownerKey, setOperatorOnChain } from "../helpers/owner";
import { SET_OWNER_TYPES, policyDomain } from "../../src/chain/typedData";
import { NO_LEAF } from "../../src/policy/allowlist";

const ONCHAIN_BLOCKS = 3;

describe("hostile callers against the service", () => {
  let s: Stack;
  let owner: Wallet;

  before(async () => {
    // A low cap on the refusals recorded on-chain per agent and hour, so the cap itself is seen.
    s = await startStack({ BLOCKED_ONCHAIN_PER_HOUR: String(ONCHAIN_BLOCKS) });
    owner = randomOwner();
  });
  after(async () => {
    await s?.close();
  });

  it("refuses a maxAmount the contract cannot record (2^64 base units or more) as bad input, sending no transaction", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    const operator = await s.svc.chain.operator.getAddress();
    const nonceBefore = await s.svc.chain.provider.getTransactionCount(operator);
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      // Not allowlisted: refused before any seller is asked, and recorded on-chain at this amount.
      body: {
        agentAddress: a.agentAddress,
        serviceUrl: "https://not-allowed.example/x",
        maxAmount: "18446744073709.551616",
        intent: "edge",
      },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(400);
    expectErrorShape(res, 400, "bad_request");
    expect(await s.svc.chain.provider.getTransactionCount(operator)).to.equal(nonceBefore);
  });

  it("refuses a seller whose payTo is the paying wallet itself off-chain, instead of a reverted authorisation and a 502", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10_000_000n);
    const seller = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, payTo: a.agentAddress });
    try {
      const operator = await s.svc.chain.operator.getAddress();
      const nonceBefore = await s.svc.chain.provider.getTransactionCount(operator);
      const res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "pay myself" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "unsupported_payment" });
      expect(seller.hits.paid).to.equal(0);
      expect(await s.svc.chain.provider.getTransactionCount(operator)).to.equal(nonceBefore);
    } finally {
      await seller.close();
    }
  });

  /** The owner's SetOwner, relayed on the contract (the contract lets anyone relay it, README), not through the service. */
  async function handOverOnChain(previous: Wallet, a: { agentAddress: string; policyContract: string }, next: Wallet): Promise<void> {
    const timestamp = s.now();
    const signature = await previous.signTypedData(policyDomain(8453, a.policyContract), SET_OWNER_TYPES, {
      agent: a.agentAddress,
      newOwner: next.address,
      timestamp,
    });
    const { chain } = s.svc;
    await chain.sendAndWait((o) => chain.policyAt(a.policyContract).setOwner(next.address, timestamp, signature, o));
  }

  it("follows a hand-over relayed on-chain by anyone: the previous owner's key loses the agent, the new owner gets it", async () => {
    const previous = randomOwner();
    const a = await s.onboard(previous, { allowlist: ["127.0.0.1"] });
    const previousKey = await ownerKey(s, previous);
    const next = randomOwner();
    await handOverOnChain(previous, a, next);
    await s.svc.indexer.syncOnce();

    // The previous owner can no longer take an agent key (and pay with the new owner's budget) nor act for the agent.
    const rotate = await s.api("POST", `/agents/${a.agentAddress}/key`, { key: previousKey });
    expectErrorShape(rotate, 403, "forbidden");
    const nextKey = await ownerKey(s, next);
    const limits = await s.api("GET", `/limits?address=${a.agentAddress}`, { key: nextKey });
    expect(limits.status, JSON.stringify(limits.body)).to.equal(200);
    // The agent key from before the hand-over is revoked with it (the previous owner may hold it).
    const pay = { agentAddress: a.agentAddress, serviceUrl: "http://127.0.0.1:1/r", maxAmount: "1", intent: "after the hand-over" };
    expectErrorShape(await s.api("POST", "/pay", { key: a.apiKey, body: pay }), 401, "unauthorized");
  });

  it("answers a refusal whose on-chain record reverts (the operator moved after the policy was read) as blocked, never a 500, within the on-chain cap", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    // The owner's SetOperator, relayable by anyone: this service no longer relays for the agent.
    await setOperatorOnChain(s, owner, a.policyContract, Wallet.createRandom().address);
    const { chain } = s.svc;

    // POST /pay reads the operator first and answers 409 (operatorMoved.test.ts); the record's own catch is for an
    // operator moved between that read and the send, so the refusal is recorded here as the payment path does it.
    const agent = await s.svc.store.agents.findOne({ address: a.agentAddress });
    if (!agent) throw new Error("agent not stored");
    const refuse = (merchant: string) =>
      s.svc.services.payments.block(
        { agent, merchant, serviceUrl: `https://${merchant}/x`, intent: "edge", seller: { url: `https://${merchant}/x`, method: "GET" } },
        { amount: 1_000_000n, reason: "merchant_not_allowed", proof: NO_LEAF },
      );
    const res = await refuse("not-allowed.example");
    expect(res).to.include({ status: "blocked", reason: "merchant_not_allowed", txHash: null });
    const entry = await s.svc.store.payments.findOne({ txnId: res.transactionId });
    expect(entry?.detail).to.match(/not recorded on-chain/);

    // Each such attempt cost the operator a reverted transaction: they count against the agent's on-chain cap, and the
    // owner's gas allowance pays for them.
    const ownerApiKey = await ownerKey(s, owner);
    const transactions = async () =>
      ((await s.api("GET", "/owner/gas", { key: ownerApiKey })).body as { transactions: number }).transactions;
    const charged = await transactions();
    const sender = await chain.operator.getAddress();
    const nonceBefore = await chain.provider.getTransactionCount(sender);
    for (let i = 0; i < ONCHAIN_BLOCKS + 2; i++) {
      expect(await refuse(`not-allowed-${i}.example`)).to.include({ status: "blocked", txHash: null });
    }
    expect((await chain.provider.getTransactionCount(sender)) - nonceBefore).to.equal(ONCHAIN_BLOCKS - 1);
    expect((await transactions()) - charged).to.equal(ONCHAIN_BLOCKS - 1);
  });

  it("charges the owner's gas allowance for an authorisation that reverts because the owner set another operator, once", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10_000_000n);
    // The payment path caches the policy (here with a refusal recorded on-chain); the indexer is held back below, so
    // the cache still names this service as operator: the stale case the contract's revert is the backstop for.
    await s.svc.indexer.stop();
    const warm = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: "https://not-allowed.example/warm", maxAmount: "1", intent: "edge" },
    });
    expect(warm.status, JSON.stringify(warm.body)).to.equal(422);
    await setOperatorOnChain(s, owner, a.policyContract, Wallet.createRandom().address);
    const { chain } = s.svc;
    const seller = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress });
    try {
      const ownerApiKey = await ownerKey(s, owner);
      const gas = async () => (await s.api("GET", "/owner/gas", { key: ownerApiKey })).body as { transactions: number; costGwei: number };
      const before = await gas();
      const sender = await chain.operator.getAddress();
      const nonceBefore = await chain.provider.getTransactionCount(sender);
      const pay = () =>
        s.api("POST", "/pay", {
          key: a.apiKey,
          body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "edge" },
        });
      const first = await pay();
      expect(first.status, JSON.stringify(first.body)).to.equal(502);
      // The failure dropped the stale copy: a retry reads the operator afresh and is refused without a transaction.
      const retry = await pay();
      expect(retry.status, JSON.stringify(retry.body)).to.equal(409);
      expect(retry.body.message).to.include("set another operator on-chain");
      // Every transaction the operator sent for the agent (reverted ones too) is the owner's to pay for.
      const sent = (await chain.provider.getTransactionCount(sender)) - nonceBefore;
      expect(sent).to.equal(1);
      const after = await gas();
      expect(after.transactions - before.transactions).to.equal(sent);
      expect(after.costGwei).to.be.greaterThan(before.costGwei);
      expect(seller.hits.paid).to.equal(0);
    } finally {
      await seller.close();
      s.svc.indexer.start(500, () => s.svc.indexerLease.hold());
    }
  });

  it("takes the kill switch from the owner the contract knows: a hand-over relayed on-chain, before the indexer saw it", async () => {
    await s.svc.indexer.stop();
    const previous = randomOwner();
    const a = await s.onboard(previous, { allowlist: ["127.0.0.1"] });
    const next = randomOwner();
    await handOverOnChain(previous, a, next);
    expect((await s.svc.store.agents.findOne({ address: a.agentAddress }))?.ownerAddress).to.equal(previous.address);
    const pause = async (signer: Wallet, timestamp?: number) => {
      const { signature, timestamp: at } = await s.signPause(signer, a.agentAddress, true, timestamp);
      return s.api("POST", `/agents/${a.agentAddress}/pause`, {
        key: a.apiKey,
        body: { paused: true, humanSignature: signature, timestamp: at },
      });
    };
    const nonce = await s.svc.chain.provider.getTransactionCount(s.svc.chain.operator.address);
    // The previous owner's is refused before anything is sent; the new owner's pauses the agent at once.
    expectErrorShape(await pause(previous), 401);
    expect(await s.svc.chain.provider.getTransactionCount(s.svc.chain.operator.address)).to.equal(nonce);
    const res = await pause(next, s.now() + 1);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(await s.svc.chain.policyAt(a.policyContract, s.svc.chain.provider).paused()).to.equal(true);
  });
});
