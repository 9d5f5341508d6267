/**
 * Two instances whose agents' operator is the cluster's OperatorSet (each instance relays with its own member key):
 * they pay as before (an instance asks the set once whether its key is in, then never per payment); an agent whose owner moved the operator to a key outside the set gets the 409 from either instance, which
 * names the set as the operator to set back, and nothing is sent. An instance whose key is taken out of the set asks it
 * again after the payment that reverted, and answers 503 from then on.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { randomOwner, startStack } from "../helpers/stack";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { setOperatorOnChain } from "../helpers/owner";
import { bind } from "../../src/chain/contracts";

const USDC = 1_000_000n;

describe("agents whose operator is the cluster's OperatorSet", () => {
  let t: TwoInstances;
  let seller: TestSeller;
  const owner = randomOwner();

  before(async () => {
    t = await startTwoInstances({ env: {} });
    seller = await startV2Seller({ facilitator: await fundedFacilitator(t.b), usdc: t.b.svc.config.usdcAddress, price: USDC / 100n });
  });
  after(async () => {
    await seller?.close();
    await t?.close();
  });

  const pay = (s: TwoInstances["a"], a: { agentAddress: string; apiKey: string }) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "set" },
    });

  it("pays from either instance, asking the set's isOperator once per instance, not per payment", async () => {
    const a = await t.a.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(t.a, a.agentAddress, 10n * USDC);
    const set = t.chain.addresses.operatorSet;
    expect(set).to.be.a("string");
    expect((await t.a.svc.services.policies.onchainAt(a.agentAddress)).operator).to.equal(set);

    // Every read A makes that targets the set (its isOperator), by payment.
    const chain = t.a.svc.chain;
    const readMany = chain.readMany.bind(chain);
    let setReads = 0;
    chain.readMany = (calls: readonly { target: string }[]) => {
      setReads += calls.filter((c) => c.target.toLowerCase() === set?.toLowerCase()).length;
      return readMany(calls as never);
    };
    const perPayment: number[] = [];
    try {
      for (const s of [t.a, t.b, t.a, t.b, t.a]) {
        setReads = 0;
        const res = await pay(s, a);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        if (s === t.a) perPayment.push(setReads);
      }
    } finally {
      chain.readMany = readMany;
    }
    expect(perPayment).to.deep.equal([1, 0, 0]);
  });

  it("refuses an agent moved to a key outside the set on both instances, naming the set to set back", async () => {
    const a = await t.a.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(t.a, a.agentAddress, 10n * USDC);
    const elsewhere = Wallet.createRandom().address;
    await setOperatorOnChain(t.a, owner, a.agentAddress, elsewhere);

    const nonces = () => Promise.all([t.a, t.b].map((s) => s.svc.chain.provider.getTransactionCount(s.svc.chain.operator.address)));
    const before = await nonces();
    for (const s of [t.a, t.b]) {
      const res = await pay(s, a);
      expect(res.status, JSON.stringify(res.body)).to.equal(409);
      expect(res.body).to.include({ error: "conflict" });
      expect(res.body.message)
        .to.include(elsewhere)
        .and.include(`SetOperator back to the service's operator ${t.chain.addresses.operatorSet}`);
    }
    expect(await nonces()).to.deep.equal(before);
  });

  it("answers 503 from an instance whose key is not in the set (not the owner's doing), sending nothing", async () => {
    const a = await t.a.onboard(owner, { allowlist: ["127.0.0.1"] });
    const { mongodbUri, mongodbDb, walletEncryptionKey } = t.a.svc.config;
    const outsider = Wallet.createRandom();
    const c = await startStack(
      {
        MONGODB_URI: mongodbUri,
        MONGODB_DB: mongodbDb,
        WALLET_ENCRYPTION_KEY: walletEncryptionKey,
        INSTANCE_ID: "inst-c",
        LOG_LEVEL: "warn",
      },
      { embeddedChain: t.chain, operatorPrivateKey: outsider.privateKey },
    );
    try {
      const res = await pay(c, a);
      expect(res.status, JSON.stringify(res.body)).to.equal(503);
      expect(res.body).to.include({ error: "unavailable" });
      expect(res.body.message)
        .to.include(outsider.address)
        .and.include(`not a member of the service's OperatorSet ${t.chain.addresses.operatorSet}`);
      expect(await c.svc.chain.provider.getTransactionCount(outsider.address)).to.equal(0);
    } finally {
      await c.close();
    }
  });

  it("asks the set again after a failed payment: an instance whose key was removed answers 503 from then on, not a revert per retry", async () => {
    const a = await t.b.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(t.b, a.agentAddress, 10n * USDC);
    expect((await pay(t.b, a)).status).to.equal(200); // B has seen its key in the set
    const set = bind("OperatorSet", t.chain.addresses.operatorSet!, new Wallet(t.chain.factoryOwner.privateKey, t.b.svc.chain.provider));
    const key = t.b.svc.chain.operator.address;
    await (await set.getFunction("removeOperator")(key)).wait();
    try {
      const nonce = () => t.b.svc.chain.provider.getTransactionCount(key);
      // The first attempt still trusts what it saw: its authorisation reverts (charged), and it answers 502.
      expect((await pay(t.b, a)).status).to.equal(502);
      const before = await nonce();
      for (let i = 0; i < 3; i++) {
        const res = await pay(t.b, a);
        expect(res.status, JSON.stringify(res.body)).to.equal(503);
        expect(res.body.message).to.include(key);
      }
      expect(await nonce()).to.equal(before);
    } finally {
      await (await set.getFunction("addOperator")(key)).wait();
    }
  });
});
