/**
 * The indexer against the real stack (embedded Hardhat chain, CongoDB, the service booted over HTTP): which events it
 * reads and how it decodes them. Cursor, restarts and re-orgs are in indexer.reorg.test.ts; the ledger links in
 * indexer.ledger.test.ts.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Contract, type Wallet, ZeroAddress, getAddress, id } from "ethers";
import { INDEXER_NAME } from "../../src/indexer/indexer";
import { NO_EXTRA_LIMITS, SET_POLICY_TYPES, policyDomain } from "../../src/chain/typedData";
import { allowlistRoot, leafStruct, proveMerchant, merchantsOf } from "../../src/policy/allowlist";
import { randomOwner, type Stack } from "../helpers/stack";
import { deployFactoryContract } from "../../src/chain/deploy";
import hre from "hardhat";
import { ALLOWLIST, NO_APPROVAL, PAY_TO, randomId, transferOf, useIndexerStack, type IndexerAgent } from "../helpers/indexerFixture";

describe("indexer", () => {
  const fx = useIndexerStack();
  const { chain, store, freshStore, indexer, transfers, authorize, release, fundedWallet, ledgerEntry } = fx;
  let s: Stack;
  let owner: Wallet;
  let agent: IndexerAgent;
  before(() => {
    ({ s, owner, agent } = fx);
  });

  it("is wired into the service: the start-up run created the cursor at the factory's deploy block or later", async () => {
    const state = await store().indexerState.findOne({ name: INDEXER_NAME, chainId: s.svc.config.chainId });
    expect(state, "indexerState").to.not.equal(null);
    expect(state!.nextBlock).to.be.greaterThan(s.svc.config.factoryDeployBlock);
  });

  it("indexes an onboarded agent's AgentDeployed, PolicyUpdated, OwnerSet and OperatorSet with decoded args", async () => {
    await s.svc.indexer.syncOnce();
    const events = await store().chainEvents.find({ agentAddress: agent.agentAddress }).toArray();
    const byName = Object.fromEntries(events.map((e) => [e.event, e]));
    expect(Object.keys(byName)).to.include.members(["AgentDeployed", "PolicyUpdated", "OwnerSet", "OperatorSet"]);

    const deployed = byName.AgentDeployed;
    expect(deployed.address).to.equal(getAddress(chain().factory.target as string));
    expect(deployed.args).to.deep.equal({ agent: agent.agentAddress, owner: owner.address, policy: agent.policyContract });
    expect(deployed).to.include({ chainId: 8453, confirmed: true, removed: false, paymentId: null });
    expect(deployed.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(deployed.blockHash).to.match(/^0x[0-9a-f]{64}$/);
    const block = await chain().provider.getBlock(deployed.blockNumber);
    expect(block!.hash).to.equal(deployed.blockHash);

    const updated = byName.PolicyUpdated;
    expect(updated.address).to.equal(agent.policyContract);
    expect(updated.args).to.include({
      agent: agent.agentAddress,
      perTxLimit: "5000000",
      dailyBudget: "1000000000",
      approvalThreshold: "2000000",
      // The grown SetPolicy's fields, flattened from the tuple like the first four.
      ...Object.fromEntries(Object.keys(NO_EXTRA_LIMITS).map((k) => [k, "0"])),
    });
    // The allowlist as the owner signed it, entry by entry, and the root the contract derived from it.
    expect(updated.args.merchants).to.deep.equal(merchantsOf(ALLOWLIST).map((m) => ({ ...m, dailyCap: m.dailyCap.toString() })));
    expect(updated.args.allowlistRoot).to.equal(allowlistRoot(ALLOWLIST));
    expect(updated.args.timestamp).to.match(/^\d+$/);
    expect(updated.args.version).to.equal("1");
    // The owner's SetPolicy signature rides in the event (an auditor recovers the signer from the log).
    expect(updated.args.signature).to.match(/^0x[0-9a-f]{130}$/);
    // Set at deployment: timestamp 0 and no signature.
    expect(byName.OperatorSet.args).to.deep.equal({
      agent: agent.agentAddress,
      operator: chain().operator.address,
      timestamp: "0",
      signature: "0x",
    });
    expect(byName.OwnerSet.args).to.deep.equal({ agent: agent.agentAddress, owner: owner.address, timestamp: "0", signature: "0x" });
  });

  it("indexes PaymentAuthorized, PaymentBlocked and PaymentReleased sent straight from the operator", async () => {
    const authorizedId = randomId();
    const blockedId = randomId();
    const a = await authorize(agent.policyContract, authorizedId, 1_500_000n);
    const b = await authorize(agent.policyContract, blockedId, 6_000_000n); // above perTxLimit: blocked, not reverted
    const r = await release(agent.policyContract, authorizedId);
    expect(await s.svc.indexer.syncOnce()).to.equal(3);

    const authorized = await store().chainEvents.findOne({ txHash: a.hash });
    expect(authorized).to.include({
      event: "PaymentAuthorized",
      paymentId: authorizedId,
      agentAddress: agent.agentAddress,
      blockNumber: a.blockNumber,
      confirmed: true,
      removed: false,
    });
    expect(authorized!.args).to.deep.equal({
      paymentId: authorizedId,
      agent: agent.agentAddress,
      merchantHash: id("localhost"),
      merchant: "localhost",
      payTo: PAY_TO,
      amount: "1500000",
      validAfter: transfers.get(authorizedId)!.validAfter.toString(),
      validBefore: transfers.get(authorizedId)!.validBefore.toString(),
      spentToday: authorized!.args.spentToday,
      epoch: authorized!.args.epoch,
      // The allowlist leaf that admitted it (ALLOWLIST: no caps, no payees).
      leafEntry: "localhost",
      leafDailyCap: "0",
      leafPayee: ZeroAddress,
    });
    expect(authorized!.args.epoch).to.equal(String(await chain().policyAt(agent.policyContract, chain().provider).epoch()));
    expect(BigInt(authorized!.args.spentToday as string) >= 1_500_000n).to.equal(true);

    const blocked = await store().chainEvents.findOne({ txHash: b.hash });
    expect(blocked).to.include({ event: "PaymentBlocked", paymentId: blockedId, agentAddress: agent.agentAddress, confirmed: true });
    expect(blocked!.args).to.deep.equal({
      paymentId: blockedId,
      agent: agent.agentAddress,
      merchantHash: id("localhost"),
      merchant: "localhost",
      amount: "6000000",
      reason: "2",
      // The leaf the operator presented, which the policy judged.
      leafEntry: "localhost",
      leafDailyCap: "0",
      leafPayee: ZeroAddress,
    });

    const released = await store().chainEvents.findOne({ txHash: r.hash });
    expect(released).to.include({ event: "PaymentReleased", paymentId: authorizedId });
    expect(released!.args).to.deep.equal({
      paymentId: authorizedId,
      agent: agent.agentAddress,
      amount: "1500000",
      spentToday: String(BigInt(authorized!.args.spentToday as string) - 1_500_000n),
    });
  });

  it("is idempotent: a second run writes nothing and no event is stored twice", async () => {
    await authorize(agent.policyContract, randomId(), 1n);
    await s.svc.indexer.syncOnce();
    const count = await store().chainEvents.countDocuments({});
    expect(await s.svc.indexer.syncOnce()).to.equal(0);
    expect(await s.svc.indexer.syncOnce()).to.equal(0);
    expect(await store().chainEvents.countDocuments({})).to.equal(count);
    const all = await store().chainEvents.find({}).toArray();
    const keys = new Set(all.map((e) => `${e.chainId}:${e.txHash}:${e.logIndex}`));
    expect(keys.size).to.equal(all.length);
  });

  it("never indexes look-alike events: a second factory, its policy and its payments for the same agent", async () => {
    await s.svc.indexer.syncOnce();
    const before = await store().chainEvents.countDocuments({});
    const victimId = randomId();
    await store().payments.insertOne(ledgerEntry({ paymentId: victimId }));

    // A stranger deploys the same factory code, becomes its operator and deploys a policy for our agent.
    const stranger = await fundedWallet();
    const artifact = JSON.parse(
      readFileSync(join(__dirname, "..", "..", "artifacts", "contracts", "SpendPolicyFactory.sol", "SpendPolicyFactory.json"), "utf8"),
    );
    const fake = await deployFactoryContract(hre, stranger, stranger.address, stranger.address, await chain().usdc.getAddress());
    const fakeFactory = new Contract(fake.address, artifact.abi, stranger);
    const signerAddress = (await store().agents.findOne({ address: agent.agentAddress }))!.signerAddress;
    const fakePolicyAddress: string = getAddress(await fakeFactory.predictAgent(signerAddress, ZeroAddress));
    expect(fakePolicyAddress).to.not.equal(agent.policyContract);
    const timestamp = s.now();
    const policy = {
      agent: fakePolicyAddress,
      perTxLimit: 10n ** 9n,
      dailyBudget: 10n ** 12n,
      merchants: merchantsOf(ALLOWLIST),
      approvalThreshold: 10n ** 9n,
      ...NO_EXTRA_LIMITS,
      timestamp,
    };
    const sig = await owner.signTypedData(policyDomain(8453, fakePolicyAddress), SET_POLICY_TYPES, policy);
    const deployTx = await fakeFactory.deployAgent(signerAddress, owner.address, false, policy, timestamp, sig);
    const deployReceipt = await deployTx.wait();
    // ... and emits PaymentAuthorized with the paymentId of one of our ledger entries.
    const proof = proveMerchant(ALLOWLIST, "localhost")!;
    const fakePolicy = chain().policyAt(fakePolicyAddress, stranger);
    const payReceipt = await (
      await fakePolicy.authorizePayment(victimId, "localhost", leafStruct(proof), proof.proof, transferOf(1n), NO_APPROVAL)
    ).wait();
    expect(payReceipt!.logs.length).to.be.greaterThan(0);

    expect(await s.svc.indexer.syncOnce()).to.equal(0);
    expect(await indexer().syncOnce()).to.equal(0);
    expect(await store().chainEvents.countDocuments({})).to.equal(before);
    expect(await store().chainEvents.countDocuments({ txHash: { $in: [deployReceipt.hash, payReceipt!.hash] } })).to.equal(0);
    expect(
      await store().chainEvents.countDocuments({ address: { $in: [fakePolicyAddress, getAddress(fakeFactory.target as string)] } }),
    ).to.equal(0);
    expect((await store().payments.findOne({ paymentId: victimId }))!.onchain).to.deep.equal({ confirmed: false, blockNumber: null });
  });

  it("measures: events per second for 200 payments from the deploy block into an empty store", async function () {
    this.timeout(300_000);
    const payer = await s.onboard(randomOwner(), { perTxLimit: "5", dailyBudget: "1000", approvalThreshold: "2" });
    const proof = proveMerchant(ALLOWLIST, "localhost")!;
    const c = chain().policyAt(payer.policyContract);
    const ids = Array.from({ length: 200 }, randomId);
    const sent = [];
    for (const id of ids)
      sent.push(
        await chain().sendTx((o) => c.authorizePayment(id, "localhost", leafStruct(proof), proof.proof, transferOf(1n), NO_APPROVAL, o)),
      );
    await Promise.all(sent.map((tx) => chain().waitFor(tx)));

    const st = await freshStore();
    const now = new Date();
    await st.payments.insertMany(
      ids.map((id) =>
        ledgerEntry({
          paymentId: id,
          agentAddress: payer.agentAddress,
          policyAddress: payer.policyContract,
          createdAt: now,
          updatedAt: now,
        }),
      ),
    );
    const idx = indexer({ store: st });
    const t0 = process.hrtime.bigint();
    const written = await idx.syncOnce();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    expect(written).to.be.greaterThanOrEqual(200);
    expect(await st.payments.countDocuments({ "onchain.confirmed": true })).to.equal(200);
    const rate = Math.round((written / ms) * 1000);

    console.log(
      `      indexer: ${written} events (${idx.lastRun!.toBlock - idx.lastRun!.fromBlock + 1} blocks, ${idx.lastRun!.policies} policies, 200 ledger links) in ${ms.toFixed(0)} ms = ${rate} events/s`,
    );
  });
});
