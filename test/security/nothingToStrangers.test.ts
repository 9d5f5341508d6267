/**
 * "Nothing to strangers", against a running SpendGate: an attacker with every server secret (the operator key, the
 * WALLET_ENCRYPTION_KEY, the database with every encrypted agent key) and no owner key. With the owner's payees
 * pinned, no path moves a unit to an address she did not name; nothing authorised before a pause, a policy change or
 * an operator or owner change settles after it; a database write alone deploys nothing and re-links nothing; and an
 * agent created with its owner's key can be deployed for nobody else, whoever holds the operator key.
 */
import { createHash, randomBytes } from "node:crypto";
import { expect } from "chai";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { Wallet, ZeroAddress, getAddress } from "ethers";
import { NO_EXTRA_LIMITS, SET_POLICY_TYPES, policyDomain } from "../../src/chain/typedData";
import { ANY_PAYEE, leafStruct, proveMerchant, merchantsOf } from "../../src/policy/allowlist";
import { drainWithinPolicy, runAttacks, type Secrets, type Target } from "../helpers/attacker";
import { NO_APPROVAL, settleFromWallet } from "../helpers/attackerBase";
import { ownerKey } from "../helpers/owner";
import { approvalDecision } from "../helpers/payments";
import { listen } from "../helpers/sellerServer";
import { mintUsdc, startV2Seller, fundedFacilitator, usdcBalance, type TestSeller } from "../helpers/sellers";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";
import { stealAgentKey } from "../helpers/stealKey";

const USDC = 1_000_000n;
const ENCRYPTION_KEY = randomBytes(32).toString("hex");

describe("nothing to strangers: a stolen server pays only the payees the owner named, until she pauses", function () {
  let s: Stack;
  let seller: TestSeller;
  let receiver: Receiver;

  before(async () => {
    s = await startStack({ WALLET_ENCRYPTION_KEY: ENCRYPTION_KEY });
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    receiver = await startReceiver();
  });
  after(async () => {
    await seller?.close();
    await receiver?.close();
    await s?.close();
  });

  /** A wallet with gas that relays the owner's signed actions (anyone may). */
  async function fundedRelayer(): Promise<Wallet> {
    const w = Wallet.createRandom().connect(s.svc.chain.provider) as unknown as Wallet;
    await s.svc.chain.provider.send("hardhat_setBalance", [w.address, "0xde0b6b3a7640000"]);
    return w;
  }

  /** An agent paying `seller` under a policy whose only entry is pinned to the seller's payTo; the stolen secrets. */
  async function pinnedAgent(policy: Record<string, unknown> = {}) {
    const owner = randomOwner();
    const a = await s.onboard(owner, {
      perTxLimit: "5",
      dailyBudget: "12",
      approvalThreshold: "5",
      allowlist: ["127.0.0.1"],
      payees: { "127.0.0.1": seller.payTo },
      ...policy,
    });
    await mintUsdc(s, a.agentAddress, 100n * USDC);
    const secrets: Secrets = {
      operator: new Wallet(s.svc.config.operatorPrivateKey, s.svc.chain.provider),
      agentKey: await stealAgentKey(s, ENCRYPTION_KEY, a.agentAddress),
    };
    const contract = await hre.ethers.getContractAt("SpendPolicy", a.agentAddress);
    const token = await hre.ethers.getContractAt("TestUSDC", s.svc.config.usdcAddress);
    const proved = proveMerchant(["127.0.0.1"], "127.0.0.1", {}, { "127.0.0.1": seller.payTo })!;
    const thief = Wallet.createRandom().address;
    const target: Target = {
      agent: contract,
      agentAddress: a.agentAddress,
      token,
      merchant: { host: "127.0.0.1", leaf: leafStruct(proved), proof: proved.proof },
      thief,
    };
    return { owner, a, secrets, contract, token, target, thief };
  }

  /** Authorises a transfer to the pinned payee with the stolen operator key (what the residual risk is). */
  async function authorizeToPayee(t: Awaited<ReturnType<typeof pinnedAgent>>, amount: bigint) {
    const paymentId = hre.ethers.hexlify(hre.ethers.randomBytes(32));
    const transfer = { payTo: seller.payTo, amount, validAfter: 0n, validBefore: BigInt(await time.latest()) + 1_800n };
    const op = t.contract.connect(t.secrets.operator);
    await (
      await op.authorizePayment(paymentId, "127.0.0.1", t.target.merchant.leaf, t.target.merchant.proof, transfer, NO_APPROVAL)
    ).wait();
    expect(await t.contract.paymentState(paymentId)).to.equal(1n);
    return { paymentId, transfer };
  }

  /** Whether settling that transfer with the stolen agent key goes through. */
  async function settles(t: Awaited<ReturnType<typeof pinnedAgent>>, p: Awaited<ReturnType<typeof authorizeToPayee>>): Promise<boolean> {
    const { transfer } = p;
    return settleFromWallet(t.secrets, t.target, {
      to: transfer.payTo,
      value: transfer.amount,
      validAfter: 0n,
      validBefore: transfer.validBefore,
      nonce: p.paymentId,
    }).then(
      () => true,
      () => false,
    );
  }

  it("refuses a seller that switches its payTo (payee_not_allowed, nothing moves) and tells the owner's webhook", async () => {
    const t = await pinnedAgent();
    const key = await ownerKey(s, t.owner);
    const hook = await s.api("POST", "/webhooks", { key, body: { url: `${receiver.url}?payee`, events: ["payment.blocked"] } });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    const paid = await s.api("POST", "/pay", {
      key: t.a.apiKey,
      body: { agentAddress: t.a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "pinned payee" },
    });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);

    // The same host, the stock x402 seller, now asking to be paid at another address.
    const moved = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    try {
      const before = await usdcBalance(s, t.a.agentAddress);
      const res = await s.api("POST", "/pay", {
        key: t.a.apiKey,
        body: { agentAddress: t.a.agentAddress, serviceUrl: moved.resource, maxAmount: "1", intent: "seller moved" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "payee_not_allowed", onchainEvent: "PaymentBlocked" });
      expect(getAddress(res.body.payTo)).to.equal(getAddress(moved.payTo));
      expect(getAddress(res.body.pinnedPayee)).to.equal(getAddress(seller.payTo));
      expect(moved.hits.paid).to.equal(0);
      expect(await usdcBalance(s, t.a.agentAddress)).to.equal(before);
      expect(await usdcBalance(s, moved.payTo)).to.equal(0n);
      const seen = await receiver.until((r) =>
        r.some((x) => x.path.endsWith("?payee") && x.body.type === "payment.blocked" && x.body.data.reason === "payee_not_allowed"),
      );
      const alert = seen.find((x) => x.path.endsWith("?payee") && x.body.data.reason === "payee_not_allowed")!;
      expect(getAddress(alert.body.data.refusedPayTo)).to.equal(getAddress(moved.payTo));
    } finally {
      await moved.close();
    }
  });

  it("binds the owner's approval to the payee: a seller that moves its payTo before the approval gets 409, nothing sent", async () => {
    const t = await pinnedAgent({ approvalThreshold: "0.5", payees: {} });
    const key = await ownerKey(s, t.owner);
    // One host whose seller answers from the first payee, then from another (the same stock x402 seller code).
    const other = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    let target = seller;
    const proxy = await listen(async (req, res) => {
      const upstream = await fetch(`${target.url}${req.url}`, { headers: req.headers as Record<string, string> });
      const headers: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (k !== "content-length" && k !== "transfer-encoding") headers[k] = v;
      });
      res.writeHead(upstream.status, headers).end(await upstream.text());
    });
    try {
      const pending = await s.api("POST", "/pay", {
        key: t.a.apiKey,
        body: { agentAddress: t.a.agentAddress, serviceUrl: `${proxy.url}/resource`, maxAmount: "1", intent: "needs approval" },
      });
      expect(pending.status, JSON.stringify(pending.body)).to.equal(202);
      const [listed] = (await s.api("GET", "/approvals", { key })).body.approvals as { id: string; payTo: string }[];
      expect(getAddress(listed.payTo)).to.equal(getAddress(seller.payTo)); // what the owner reads, and signs
      const item = { id: pending.body.approvalId, agentAddress: t.a.agentAddress, merchant: "127.0.0.1", amount: "1", payTo: seller.payTo };
      target = other; // the seller moves its payTo
      const before = await usdcBalance(s, t.a.agentAddress);
      const paidBefore = seller.hits.paid;
      const moved = await s.api("POST", `/approvals/${item.id}/approve`, {
        key,
        body: await approvalDecision(s, t.owner, item, "approve"),
      });
      expect(moved.status, JSON.stringify(moved.body)).to.equal(409);
      expect(moved.body.error).to.equal("payee_changed");
      expect(other.hits.paid + seller.hits.paid).to.equal(paidBefore);
      expect(await usdcBalance(s, t.a.agentAddress)).to.equal(before);
      // Back at the approved payee, the same approval pays it, once.
      target = seller;
      const ok = await s.api("POST", `/approvals/${item.id}/approve`, {
        key,
        body: await approvalDecision(s, t.owner, item, "approve", s.now() + 1),
      });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect(seller.hits.paid).to.equal(paidBefore + 1);
    } finally {
      await proxy.close();
      await other.close();
    }
  });

  it("lets none of the payments authorised before a pause settle after the owner's signed resume", async () => {
    const t = await pinnedAgent();
    const early = [await authorizeToPayee(t, USDC), await authorizeToPayee(t, USDC), await authorizeToPayee(t, USDC)];
    // The owner's signed pause, then resume, relayed by a wallet of hers (anyone may relay; the stolen operator key's
    // nonce is the attacker's, so the service's own relaying is not what is tested here).
    const relayer = await fundedRelayer();
    const at = s.now();
    for (const paused of [true, false]) {
      // The resume is signed after the pause landed: it names the epoch the pause started.
      const sig = await s.signPause(t.owner, t.a.agentAddress, paused, paused ? at : Math.max(at, await time.latest()) + 1);
      await (await t.contract.connect(relayer).setPaused(paused, sig.epoch, sig.timestamp, sig.signature)).wait();
    }
    expect(await t.contract.paused()).to.equal(false);
    const settled = [];
    for (const p of early) settled.push(await settles(t, p));
    expect(settled).to.deep.equal([false, false, false]);
    // A payment authorised after the resume settles: the agent works again.
    expect(await settles(t, await authorizeToPayee(t, USDC))).to.equal(true);
  });

  it("lets no earlier authorisation settle after the owner signs a new policy with a budget spent to nothing", async () => {
    const t = await pinnedAgent();
    const early = [await authorizeToPayee(t, 2n * USDC), await authorizeToPayee(t, 2n * USDC)];
    // Every limit at one unit: nothing more may be authorised. Through the service, whose operator key the attacker
    // just used (its nonce moved under the service: the service reads it again instead of failing).
    const body = await s.policyBody(
      t.owner,
      t.a.agentAddress,
      {
        perTxLimit: "0.000001",
        dailyBudget: "0.000001",
        approvalThreshold: "0.000001",
        allowlist: ["127.0.0.1"],
        payees: { "127.0.0.1": seller.payTo },
      },
      s.now() + 2,
    );
    const res = await s.api("POST", "/limits", { key: t.a.apiKey, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const settled = [];
    for (const p of early) settled.push(await settles(t, p));
    expect(settled).to.deep.equal([false, false]);
  });

  it("deploys nothing for an owner a database write alone linked, and the real owner still can", async () => {
    const { agentAddress, apiKey } = await s.genesis();
    await mintUsdc(s, agentAddress, 10n * USDC); // sent before deployment: the owner's risk, shown by GET /limits
    const thief = randomOwner();
    // The attacker writes itself in as the owner, straight into the database.
    await s.svc.store.agents.updateOne({ address: agentAddress }, { $set: { ownerAddress: thief.address, linkedAt: new Date() } });
    const policy = { perTxLimit: "10", dailyBudget: "10", approvalThreshold: "10", allowlist: ["*"] };
    const res = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(thief, agentAddress, policy) });
    expect(res.status, JSON.stringify(res.body)).to.equal(409);
    expect(await s.svc.chain.isDeployed(agentAddress)).to.equal(false);
    const limits = await s.api("GET", "/limits", { key: apiKey });
    expect(limits.body.agents[0].warning).to.match(/holds 10 USDC/);

    // The owner with the activation link links it for real (the unauthenticated link does not count) and deploys.
    const owner = randomOwner();
    const link = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress) });
    expect(link.status, JSON.stringify(link.body)).to.equal(200);
    const ok = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(owner, agentAddress, policy, s.now() + 1) });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
    const contract = await hre.ethers.getContractAt("SpendPolicy", agentAddress);
    expect(await contract.owner()).to.equal(owner.address);
    // ... and a database write after deployment changes nothing on-chain: the contract names the owner.
    await s.svc.store.agents.updateOne({ address: agentAddress }, { $set: { ownerAddress: thief.address } });
    const relink = await s.api("POST", "/agents/link", { body: await s.signLink(thief, agentAddress, s.now() + 2) });
    expect(relink.status).to.equal(409);
    expect(await contract.owner()).to.equal(owner.address);
  });

  it("takes no API key a database write made: a forged agent key can neither link nor deploy an open agent", async () => {
    const owner = randomOwner();
    const { agentAddress } = await s.genesis();
    await mintUsdc(s, agentAddress, 10n * USDC);
    expect((await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress) })).status).to.equal(200);
    // The attacker mints itself an agent key in the database (as the store kept keys before: plain SHA-256), and
    // clears the owner so the agent looks unlinked.
    const forged = `sk_${randomBytes(32).toString("hex")}`;
    await s.svc.store.apiKeys.insertOne({
      hash: createHash("sha256").update(forged).digest("hex"),
      prefix: forged.slice(0, 9),
      role: "agent",
      agentAddress,
      createdAt: new Date(),
    });
    await s.svc.store.agents.updateOne({ address: agentAddress }, { $set: { ownerAddress: null } });
    const thief = randomOwner();
    const { activationCode: _code, ...withoutCode } = await s.signLink(thief, agentAddress, s.now() + 1);
    expect((await s.api("POST", "/agents/link", { key: forged, body: withoutCode })).status).to.equal(401);
    const policy = { perTxLimit: "10", dailyBudget: "10", approvalThreshold: "10", allowlist: ["*"] };
    const deploy = await s.api("POST", "/limits", { key: forged, body: await s.policyBody(thief, agentAddress, policy, s.now() + 2) });
    expect(deploy.status).to.equal(401);
    expect(await s.svc.chain.isDeployed(agentAddress)).to.equal(false);
    expect(await usdcBalance(s, agentAddress)).to.equal(10n * USDC);
  });

  it("answers a seller whose payTo has a wrong EIP-55 checksum with a refusal (no payee), never a 500 or a transaction", async () => {
    const real = Wallet.createRandom().address;
    // Flip the case of one letter: a mixed-case address that no checksum accepts.
    const i = real.slice(2).search(/[a-fA-F]/) + 2;
    const c = real[i];
    const payTo = real.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + real.slice(i + 1);
    const odd = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC, payTo });
    try {
      const t = await pinnedAgent({ payees: { "127.0.0.1": real } });
      const res = await s.api("POST", "/pay", {
        key: t.a.apiKey,
        body: { agentAddress: t.a.agentAddress, serviceUrl: odd.resource, maxAmount: "1", intent: "odd payee spelling" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "unsupported_payment", onchainEvent: null });
      expect(odd.hits.paid).to.equal(0);
    } finally {
      await odd.close();
    }
  });

  it("refuses a list where a wildcard with any payee admits a pinned entry (it would undo the pin): 400 naming both, and the contract refuses it too", async () => {
    const t = await pinnedAgent();
    const before = await t.contract.policy();
    const policy = {
      perTxLimit: "5",
      dailyBudget: "12",
      approvalThreshold: "5",
      allowlist: ["127.0.0.1", "*"],
      payees: { "127.0.0.1": seller.payTo },
    };
    const body = await s.policyBody(t.owner, t.a.agentAddress, policy);
    const res = await s.api("POST", "/limits", { key: t.a.apiKey, body });
    expectErrorShape(res, 400);
    expect(res.body.message).to.include('"*" (any payee) also admits "127.0.0.1"');
    expect(res.body.details.overlappingEntries).to.deep.equal([{ anyPayee: "*", pinned: "127.0.0.1" }]);
    expect((await t.contract.policy()).allowlistRoot).to.equal(before.allowlistRoot);
    // A stolen server relaying the owner's signature over that list straight to the contract gets nothing either.
    const merchants = merchantsOf(["127.0.0.1", "*"], {}, { "127.0.0.1": seller.payTo });
    const values = { ...NO_EXTRA_LIMITS, perTxLimit: 5n * USDC, dailyBudget: 12n * USDC, merchants, approvalThreshold: 5n * USDC };
    const ts = BigInt(await time.latest()) + 1n;
    const sig = await t.owner.signTypedData(policyDomain(8453, t.a.agentAddress), SET_POLICY_TYPES, {
      agent: t.a.agentAddress,
      ...values,
      timestamp: ts,
    });
    const updates = await hre.ethers.getContractAt("SpendPolicyUpdates", t.a.agentAddress);
    await expect(t.contract.connect(t.secrets.operator).updatePolicy(values, ts, sig))
      .to.be.revertedWithCustomError(updates, "SpendPolicyMerchantOverlap")
      .withArgs(0, 1);
  });

  it("cannot deploy an owner-first agent's address with another owner, even with the operator key", async () => {
    const owner = randomOwner();
    const key = await ownerKey(s, owner);
    const created = await s.api("POST", "/wallet/genesis", { key, body: { label: "owner-first" } });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const agentAddress: string = created.body.agentAddress;
    const doc = (await s.svc.store.agents.findOne({ address: agentAddress }))!;
    expect(doc.ownerBound).to.equal(true);
    const operator = new Wallet(s.svc.config.operatorPrivateKey, s.svc.chain.provider);
    const factory = s.svc.chain.factory.connect(operator);
    expect(getAddress(await factory.predictAgent(doc.signerAddress, owner.address))).to.equal(agentAddress);
    const thief = randomOwner();
    for (const bound of [true, false]) {
      const at = await factory.predictAgent(doc.signerAddress, bound ? thief.address : ZeroAddress);
      const values = {
        ...NO_EXTRA_LIMITS,
        perTxLimit: 10n ** 12n,
        dailyBudget: 10n ** 12n,
        merchants: merchantsOf(["*"]),
        approvalThreshold: 10n ** 12n,
      };
      const ts = BigInt(await time.latest()) + 1n;
      const sig = await thief.signTypedData(policyDomain(8453, at), SET_POLICY_TYPES, { agent: at, ...values, timestamp: ts });
      await (await factory.deployAgent(doc.signerAddress, thief.address, bound, values, ts, sig)).wait();
      expect(getAddress(at)).to.not.equal(agentAddress);
    }
    // The agent's own address is still empty: only its owner's signed first policy can deploy it.
    expect(await s.svc.chain.isDeployed(agentAddress)).to.equal(false);
  });
  // Last: it moves chain time a day ahead, past the window of owner signatures dated by the wall clock.
  it("moves 0 USDC to any address the owner did not name, by every path, over a whole simulated day", async () => {
    const t = await pinnedAgent();
    const attempts = await runAttacks(t.secrets, t.target);
    expect(attempts.filter((x) => !x.refused).map((x) => x.name)).to.deep.equal([]);
    for (let day = 0; day < 2; day++) {
      // The operator pays itself "as 127.0.0.1": refused on-chain, payee_not_allowed (14).
      const drained = await drainWithinPolicy(t.secrets, { ...t.target, thief: t.thief }, USDC);
      expect(drained.blockedReasons).to.deep.equal([14]);
      expect(drained.moved).to.equal(0n);
      // ... or claims the entry has no payee (payee 0): no such leaf was signed, merchant_not_allowed (1).
      const unpinned = { ...t.target.merchant, leaf: { ...t.target.merchant.leaf, payee: ANY_PAYEE } };
      const anyPayee = await drainWithinPolicy(t.secrets, { ...t.target, merchant: unpinned }, USDC);
      expect(anyPayee.blockedReasons).to.deep.equal([1]);
      await time.increase(12 * 3_600);
    }
    expect(await usdcBalance(s, t.thief)).to.equal(0n);
    // What remains is paying the named payee within the budget: at most the daily budget, and only to the seller.
    const before = await usdcBalance(s, seller.payTo);
    const paid = await drainWithinPolicy(t.secrets, { ...t.target, thief: seller.payTo }, 4n * USDC);
    expect(paid.moved).to.be.lessThanOrEqual(12n * USDC);
    expect((await usdcBalance(s, seller.payTo)) - before).to.equal(paid.moved);
  });
});
