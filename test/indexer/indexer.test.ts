/**
 * The indexer against the real stack: embedded Hardhat chain, CongoDB, the service booted over HTTP. The service's
 * own polling loop is stopped in `before`; every run here is an explicit syncOnce(), so nothing waits on a timer.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Contract, ContractFactory, Wallet, getAddress, id, type TransactionReceipt } from "ethers";
import pino from "pino";
import { Writable } from "node:stream";
import { Indexer, INDEXER_NAME } from "../../src/indexer/indexer";
import { connectStore, type Store } from "../../src/store";
import type { PaymentDoc } from "../../src/store/documents";
import { NO_EXTRA_LIMITS, SET_POLICY_TYPES, TRANSFER_WITH_AUTHORIZATION_TYPES, policyDomain } from "../../src/chain/typedData";
import { walletPayer } from "../../src/x402/buyer";
import { allowlistRoot, normalizeAllowlist, proveMerchant } from "../../src/policy/allowlist";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { NO_SWAPS } from "../../src/chain/deploy";

const NO_APPROVAL = ["", 0, 0, "0x"] as const;
const ALLOWLIST = normalizeAllowlist(["127.0.0.1", "localhost"]).entries;
const USDC_EIP3009_ABI = [
  "function mint(address to, uint256 amount) returns (bool)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
];

const randomId = () => "0x" + randomBytes(32).toString("hex");
/** The one transfer an authorised payment lets settle (v2: authorizePayment binds payTo, amount and expiry). */
const transferOf = (amount: bigint, payTo = PAY_TO) => [payTo, amount, 0n, BigInt(Math.floor(Date.now() / 1000) + 600)] as const;
const PAY_TO = Wallet.createRandom().address;

function quietLogger(lines: string[] = []) {
  return pino(
    { level: "debug" },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    }),
  );
}

describe("indexer", () => {
  let s: Stack;
  let owner: Wallet;
  let agent: { agentAddress: string; apiKey: string; policyContract: string };
  const extraStores: Store[] = [];

  before(async () => {
    s = await startStack();
    await s.svc.indexer.stop(); // runs below are explicit
    owner = randomOwner();
    agent = await s.onboard(owner, { perTxLimit: "5", dailyBudget: "1000", approvalThreshold: "2" });
  });
  after(async () => {
    for (const st of extraStores) await st.close().catch(() => undefined);
    await s?.close();
  });

  const chain = () => s.svc.chain;
  const store = () => s.svc.store;
  const rpc = (method: string, params: unknown[] = []) => chain().provider.send(method, params);

  /** A fresh database on the same CongoDB server, for an indexer with other settings. */
  async function freshStore(): Promise<Store> {
    const st = await connectStore(s.svc.embeddedMongo!.uri, `idx_${randomBytes(4).toString("hex")}`);
    extraStores.push(st);
    return st;
  }

  function indexer(over: Partial<ConstructorParameters<typeof Indexer>[0]> = {}): Indexer {
    return new Indexer({
      chain: chain(),
      store: store(),
      chainId: s.svc.config.chainId,
      confirmations: 0,
      startBlock: s.svc.config.factoryDeployBlock,
      logger: quietLogger(),
      ...over,
    });
  }

  const transfers = new Map<string, ReturnType<typeof transferOf>>();

  /** authorizePayment straight from the operator (nonce-serialised with the service's own sends). */
  async function authorize(
    policy: string,
    paymentId: string,
    amount: bigint,
    merchant = "localhost",
    payTo = PAY_TO,
  ): Promise<TransactionReceipt> {
    const proof = proveMerchant(ALLOWLIST, merchant) ?? { leaf: "localhost", cap: 0n, proof: [] };
    const c = chain().policyAt(policy);
    const transfer = transferOf(amount, payTo);
    transfers.set(paymentId, transfer);
    const { receipt } = await chain().sendAndWait((o) =>
      c.authorizePayment(paymentId, merchant, proof.leaf, proof.cap, proof.proof, transfer, NO_APPROVAL, o),
    );
    return receipt;
  }

  async function release(policy: string, paymentId: string): Promise<TransactionReceipt> {
    const c = chain().policyAt(policy);
    return (await chain().sendAndWait((o) => c.releasePayment(paymentId, transfers.get(paymentId)!, o))).receipt;
  }

  async function fundedWallet(): Promise<Wallet> {
    const w = Wallet.createRandom().connect(chain().provider) as unknown as Wallet;
    await rpc("hardhat_setBalance", [w.address, "0x" + (10n ** 20n).toString(16)]);
    return w;
  }

  /** A ledger entry as the payment service writes it (only the fields the indexer reads matter). */
  function ledgerEntry(over: Partial<PaymentDoc>): PaymentDoc {
    const now = new Date();
    return {
      txnId: "txn_" + randomBytes(8).toString("hex"),
      agentAddress: agent.agentAddress,
      ownerAddress: owner.address,
      policyAddress: agent.policyContract,
      merchant: "localhost",
      serviceUrl: "http://localhost/x",
      amount: "1",
      currency: "USDC",
      intent: "indexer test",
      status: "processing",
      phase: "authorizing",
      reason: null,
      paymentId: null,
      approvalId: null,
      txHash: null,
      authorizeTxHash: null,
      releaseTxHash: null,
      payTo: null,
      validBefore: null,
      createdAt: now,
      updatedAt: now,
      settledAt: null,
      onchain: { confirmed: false, blockNumber: null },
      ...over,
    };
  }

  /**
   * The agent wallet's EIP-3009 transfer, authorised by its policy and signed with its custodied key (the wallet's
   * ERC-1271 format), as a raw transaction from `relayer`.
   */
  async function signedTransfer(relayer: Wallet, nonce: string, value = 1n): Promise<string> {
    const usdc = new Contract(chain().usdc.target, USDC_EIP3009_ABI, relayer);
    await (await usdc.mint(agent.agentAddress, 1_000_000n)).wait();
    await authorize(agent.policyContract, nonce, value, "localhost", relayer.address);
    const [, , validAfter, validBefore] = transfers.get(nonce)!;
    const doc = (await store().agents.findOne({ address: agent.agentAddress }))!;
    const signer = walletPayer(agent.agentAddress, await s.svc.services.ctx.wallets.signer(doc.signerAddress));
    const message = { from: agent.agentAddress, to: relayer.address, value, validAfter, validBefore, nonce };
    const signature = await signer.signTypedData({
      domain: { name: "USD Coin", version: "2", chainId: s.svc.config.chainId, verifyingContract: getAddress(usdc.target as string) },
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message,
    });
    const tx = await usdc.transferWithAuthorization.populateTransaction(
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      nonce,
      signature,
    );
    return relayer.signTransaction(await relayer.populateTransaction({ ...tx, gasLimit: 200_000n }));
  }

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
      allowlistRoot: allowlistRoot(ALLOWLIST),
      // The grown SetPolicy's fields, flattened from the tuple like the first four.
      ...Object.fromEntries(Object.keys(NO_EXTRA_LIMITS).map((k) => [k, "0"])),
    });
    expect(updated.args.timestamp).to.match(/^\d+$/);
    expect(updated.args.version).to.equal("1");
    expect(byName.OperatorSet.args).to.deep.equal({ agent: agent.agentAddress, operator: chain().operator.address, timestamp: "0" });
    expect(byName.OwnerSet.args).to.deep.equal({ agent: agent.agentAddress, owner: owner.address, timestamp: "0" });
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
      validBefore: transfers.get(authorizedId)![3].toString(),
      spentToday: authorized!.args.spentToday,
    });
    expect(BigInt(authorized!.args.spentToday) >= 1_500_000n).to.equal(true);

    const blocked = await store().chainEvents.findOne({ txHash: b.hash });
    expect(blocked).to.include({ event: "PaymentBlocked", paymentId: blockedId, agentAddress: agent.agentAddress, confirmed: true });
    expect(blocked!.args).to.deep.equal({
      paymentId: blockedId,
      agent: agent.agentAddress,
      merchantHash: id("localhost"),
      merchant: "localhost",
      amount: "6000000",
      reason: "2",
    });

    const released = await store().chainEvents.findOne({ txHash: r.hash });
    expect(released).to.include({ event: "PaymentReleased", paymentId: authorizedId });
    expect(released!.args).to.deep.equal({
      paymentId: authorizedId,
      agent: agent.agentAddress,
      amount: "1500000",
      spentToday: String(BigInt(authorized!.args.spentToday) - 1_500_000n),
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

  it("keeps its cursor across a restart: a new Indexer on the same store re-inserts nothing, then follows new blocks", async () => {
    await s.svc.indexer.syncOnce();
    const count = await store().chainEvents.countDocuments({});
    const head = await chain().provider.getBlockNumber();
    const states = await store().indexerState.find({ name: INDEXER_NAME }).toArray();
    expect(states).to.have.length(1);
    expect(states[0].nextBlock).to.equal(head + 1);

    const restarted = indexer();
    expect(await restarted.syncOnce()).to.equal(0);
    expect(restarted.lastRun!.fromBlock, "re-reads only the reorg window, not from the deploy block").to.equal(
      Math.max(s.svc.config.factoryDeployBlock, head + 1 - 12),
    );
    expect(await store().chainEvents.countDocuments({})).to.equal(count);

    const id = randomId();
    await authorize(agent.policyContract, id, 1n);
    expect(await restarted.syncOnce()).to.equal(1);
    expect(await store().chainEvents.countDocuments({ paymentId: id })).to.equal(1);
    expect(await store().indexerState.countDocuments({})).to.equal(1);
  });

  it("shares one store with another instance: learns a policy the other indexed while it moved the cursor past it", async () => {
    const a = indexer();
    await a.syncOnce();
    const newcomer = await s.onboard(randomOwner());
    const b = indexer();
    await b.syncOnce();
    for (let i = 0; i < 15; i++) await rpc("evm_mine"); // past the re-read window of `a`
    await b.syncOnce();
    const id = randomId();
    await authorize(newcomer.policyContract, id, 1n);
    expect(await a.syncOnce()).to.equal(1);
    expect(a.lastRun!.fromBlock).to.be.greaterThan(
      (await store().chainEvents.findOne({ event: "AgentDeployed", agentAddress: newcomer.agentAddress }))!.blockNumber,
    );
    expect(await store().chainEvents.findOne({ paymentId: id })).to.include({
      event: "PaymentAuthorized",
      agentAddress: newcomer.agentAddress,
      confirmed: true,
    });
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
    const fake = await new ContractFactory(artifact.abi, artifact.bytecode, stranger).deploy(
      stranger.address,
      stranger.address,
      chain().usdc.target,
      ...NO_SWAPS,
    );
    await fake.waitForDeployment();
    const fakeFactory = new Contract(await fake.getAddress(), artifact.abi, stranger);
    const signerAddress = (await store().agents.findOne({ address: agent.agentAddress }))!.signerAddress;
    const fakePolicyAddress: string = getAddress(await fakeFactory.predictAgent(signerAddress));
    expect(fakePolicyAddress).to.not.equal(agent.policyContract);
    const timestamp = s.now();
    const policy = {
      agent: fakePolicyAddress,
      perTxLimit: 10n ** 9n,
      dailyBudget: 10n ** 12n,
      allowlistRoot: allowlistRoot(ALLOWLIST),
      approvalThreshold: 10n ** 9n,
      ...NO_EXTRA_LIMITS,
      timestamp,
    };
    const sig = await owner.signTypedData(policyDomain(8453, fakePolicyAddress), SET_POLICY_TYPES, policy);
    const deployTx = await fakeFactory.deployAgent(signerAddress, owner.address, policy, timestamp, sig);
    const deployReceipt = await deployTx.wait();
    // ... and emits PaymentAuthorized with the paymentId of one of our ledger entries.
    const proof = proveMerchant(ALLOWLIST, "localhost")!;
    const fakePolicy = chain().policyAt(fakePolicyAddress, stranger);
    const payReceipt = await (
      await fakePolicy.authorizePayment(victimId, "localhost", proof.leaf, proof.cap, proof.proof, transferOf(1n), NO_APPROVAL)
    ).wait();
    expect(payReceipt.logs.length).to.be.greaterThan(0);

    expect(await s.svc.indexer.syncOnce()).to.equal(0);
    expect(await indexer().syncOnce()).to.equal(0);
    expect(await store().chainEvents.countDocuments({})).to.equal(before);
    expect(await store().chainEvents.countDocuments({ txHash: { $in: [deployReceipt.hash, payReceipt.hash] } })).to.equal(0);
    expect(
      await store().chainEvents.countDocuments({ address: { $in: [fakePolicyAddress, getAddress(fakeFactory.target as string)] } }),
    ).to.equal(0);
    expect((await store().payments.findOne({ paymentId: victimId }))!.onchain).to.deep.equal({ confirmed: false, blockNumber: null });
  });

  it("with confirmations 2, a new event stays unconfirmed until 2 more blocks are mined (and only then reaches the ledger)", async () => {
    const st = await freshStore();
    const deep = indexer({ store: st, confirmations: 2 });
    await deep.syncOnce();
    const id = randomId();
    await st.payments.insertOne(ledgerEntry({ paymentId: id }));
    const receipt = await authorize(agent.policyContract, id, 1n);

    expect(await deep.syncOnce()).to.equal(1);
    expect(await st.chainEvents.findOne({ paymentId: id })).to.include({ confirmed: false, blockNumber: receipt.blockNumber });
    expect((await st.payments.findOne({ paymentId: id }))!.onchain.confirmed).to.equal(false);

    await rpc("evm_mine");
    await deep.syncOnce();
    expect((await st.chainEvents.findOne({ paymentId: id }))!.confirmed, "1 block deep").to.equal(false);
    expect((await st.payments.findOne({ paymentId: id }))!.onchain.confirmed).to.equal(false);

    await rpc("evm_mine");
    expect(await deep.syncOnce()).to.equal(0);
    expect((await st.chainEvents.findOne({ paymentId: id }))!.confirmed, "2 blocks deep").to.equal(true);
    expect(deep.lastRun!.confirmed).to.be.greaterThan(0);
    expect((await st.payments.findOne({ paymentId: id }))!.onchain).to.deep.equal({ confirmed: true, blockNumber: receipt.blockNumber });
  });

  describe("ledger linkage", () => {
    it("PaymentAuthorized confirms the ledger entry with its paymentId (status untouched)", async () => {
      const id = randomId();
      await store().payments.insertOne(ledgerEntry({ paymentId: id, status: "processing", phase: "authorizing" }));
      const receipt = await authorize(agent.policyContract, id, 1n);
      await s.svc.indexer.syncOnce();
      const doc = await store().payments.findOne({ paymentId: id });
      expect(doc!.onchain).to.deep.equal({ confirmed: true, blockNumber: receipt.blockNumber });
      expect(doc).to.include({ status: "processing", phase: "authorizing" });
    });

    it("PaymentReleased moves the confirmation to the release block", async () => {
      const id = randomId();
      await store().payments.insertOne(ledgerEntry({ paymentId: id, status: "failed", phase: "done" }));
      await authorize(agent.policyContract, id, 1n);
      await s.svc.indexer.syncOnce();
      const r = await release(agent.policyContract, id);
      await s.svc.indexer.syncOnce();
      const doc = await store().payments.findOne({ paymentId: id });
      expect(doc!.onchain).to.deep.equal({ confirmed: true, blockNumber: r.blockNumber });
      expect(doc!.status).to.equal("failed");
    });

    it("PaymentBlocked confirms the entry whose txHash is the blocked transaction, even when written after the event", async () => {
      const receipt = await authorize(agent.policyContract, randomId(), 9_000_000n);
      await s.svc.indexer.syncOnce(); // event indexed and confirmed before the ledger entry exists
      const txnId = "txn_blocked_" + randomBytes(4).toString("hex");
      await store().payments.insertOne(
        ledgerEntry({
          txnId,
          status: "blocked",
          phase: "done",
          reason: "per_tx_limit_exceeded",
          txHash: receipt.hash,
          authorizeTxHash: receipt.hash,
          onchain: { confirmed: false, blockNumber: receipt.blockNumber },
        }),
      );
      await s.svc.indexer.syncOnce();
      const doc = await store().payments.findOne({ txnId });
      expect(doc!.onchain).to.deep.equal({ confirmed: true, blockNumber: receipt.blockNumber });
      expect(doc!.status).to.equal("blocked");
    });

    it("a confirmation overwritten by the payment service afterwards is restored on the next run", async () => {
      const id = randomId();
      await store().payments.insertOne(ledgerEntry({ paymentId: id }));
      const receipt = await authorize(agent.policyContract, id, 1n);
      await s.svc.indexer.syncOnce();
      await store().payments.updateOne(
        { paymentId: id },
        { $set: { onchain: { confirmed: false, blockNumber: receipt.blockNumber }, updatedAt: new Date() } },
      );
      await s.svc.indexer.syncOnce();
      expect((await store().payments.findOne({ paymentId: id }))!.onchain).to.deep.equal({
        confirmed: true,
        blockNumber: receipt.blockNumber,
      });
    });

    it("USDC AuthorizationUsed (agent, nonce) confirms approved payments only", async () => {
      const relayer = await fundedWallet();
      const approvedNonce = randomId();
      const failedNonce = randomId();
      await store().payments.insertMany([
        ledgerEntry({ paymentId: approvedNonce, status: "approved", phase: "done" }),
        ledgerEntry({ paymentId: failedNonce, status: "failed", phase: "done" }),
      ]);
      const r1 = await (await chain().provider.broadcastTransaction(await signedTransfer(relayer, approvedNonce))).wait();
      const r2 = await (await chain().provider.broadcastTransaction(await signedTransfer(relayer, failedNonce))).wait();
      await s.svc.indexer.syncOnce();

      const used = await store().chainEvents.findOne({ txHash: r1!.hash, event: "AuthorizationUsed" });
      expect(used).to.include({
        address: getAddress(chain().usdc.target as string),
        agentAddress: agent.agentAddress,
        paymentId: approvedNonce,
        confirmed: true,
      });
      expect(used!.args).to.deep.equal({ authorizer: agent.agentAddress, nonce: approvedNonce });
      expect(await store().chainEvents.countDocuments({ txHash: r1!.hash }), "USDC Transfer is not indexed").to.equal(1);

      expect((await store().payments.findOne({ paymentId: approvedNonce }))!.onchain).to.deep.equal({
        confirmed: true,
        blockNumber: r1!.blockNumber,
      });
      expect(await store().chainEvents.countDocuments({ txHash: r2!.hash, event: "AuthorizationUsed" })).to.equal(1);
      // A failed payment keeps the confirmation of its authorisation, never the settlement's.
      const authorizedFailed = await store().chainEvents.findOne({ paymentId: failedNonce, event: "PaymentAuthorized" });
      expect((await store().payments.findOne({ paymentId: failedNonce }))!.onchain).to.deep.equal({
        confirmed: true,
        blockNumber: authorizedFailed!.blockNumber,
      });
    });
  });

  it("reorg: events of a block that left the chain are marked removed, their ledger confirmation undone; re-mined, they come back", async () => {
    await s.svc.indexer.syncOnce();
    const relayer = await fundedWallet();
    const nonce = randomId();
    await store().payments.insertOne(ledgerEntry({ paymentId: nonce, status: "approved", phase: "done" }));
    const raw = await signedTransfer(relayer, nonce); // mints and authorises first: those stay, the transfer goes
    await s.svc.indexer.syncOnce();

    // Also a policy event relayed by a stranger (no operator nonce involved): the owner pauses the policy.
    const pause = await s.signPause(owner, agent.agentAddress, true);

    const snapshot = await rpc("evm_snapshot");
    const transfer = await (await chain().provider.broadcastTransaction(raw)).wait();
    const paused = await (await chain().policyAt(agent.policyContract, relayer).setPaused(true, pause.timestamp, pause.signature)).wait();
    expect(await s.svc.indexer.syncOnce()).to.equal(2);
    const keys = { txHash: { $in: [transfer!.hash, paused.hash] } };
    expect(await store().chainEvents.countDocuments({ ...keys, removed: false, confirmed: true })).to.equal(2);
    expect((await store().payments.findOne({ paymentId: nonce }))!.onchain).to.deep.equal({
      confirmed: true,
      blockNumber: transfer!.blockNumber,
    });

    // The two blocks leave the chain; other blocks take their heights.
    expect(await rpc("evm_revert", [snapshot])).to.equal(true);
    for (let i = 0; i < 3; i++) await rpc("evm_mine");
    expect(await s.svc.indexer.syncOnce()).to.equal(2);
    const gone = await store().chainEvents.find(keys).toArray();
    expect(gone.map((e) => [e.event, e.removed, e.confirmed]).sort()).to.deep.equal([
      ["AuthorizationUsed", true, false],
      ["PausedSet", true, false],
    ]);
    const undone = await store().payments.findOne({ paymentId: nonce });
    // Back to the confirmation of its authorisation, which stayed on the chain.
    const authorizedEvent = await store().chainEvents.findOne({ paymentId: nonce, event: "PaymentAuthorized" });
    expect(undone!.onchain).to.deep.equal({ confirmed: true, blockNumber: authorizedEvent!.blockNumber });
    expect(undone!.status).to.equal("approved");
    expect(await s.svc.indexer.syncOnce(), "stable after the reorg").to.equal(0);

    // The same transaction mined again in another block: the same event (same key) is current again.
    const again = await (await chain().provider.broadcastTransaction(raw)).wait();
    expect(again!.hash).to.equal(transfer!.hash);
    expect(again!.blockHash).to.not.equal(transfer!.blockHash);
    expect(await s.svc.indexer.syncOnce()).to.equal(1);
    const back = await store().chainEvents.find({ txHash: transfer!.hash }).toArray();
    expect(back).to.have.length(1);
    expect(back[0]).to.include({ removed: false, confirmed: true, blockHash: again!.blockHash, blockNumber: again!.blockNumber });
    expect((await store().payments.findOne({ paymentId: nonce }))!.onchain).to.deep.equal({
      confirmed: true,
      blockNumber: again!.blockNumber,
    });
  });

  it("start() polls without overlapping runs, logs a failed run and keeps going; stop() ends it", async () => {
    const lines: string[] = [];
    const idx = indexer({ logger: quietLogger(lines) });
    const original = idx.syncOnce.bind(idx);
    let calls = 0;
    let active = 0;
    let overlapped = false;
    let resolveThird!: () => void;
    const third = new Promise<void>((resolve) => (resolveThird = resolve));
    idx.syncOnce = async () => {
      calls += 1;
      if (active++ > 0) overlapped = true;
      try {
        if (calls === 1) throw new Error("rpc down");
        return await original();
      } finally {
        active -= 1;
        if (calls === 3) resolveThird();
      }
    };
    idx.start(1);
    await third;
    await idx.stop();
    const after = calls;
    expect(overlapped).to.equal(false);
    expect(lines.some((l) => l.includes("indexer run failed") && l.includes("rpc down"))).to.equal(true);
    await original(); // still usable after stop, and the loop stays stopped
    expect(calls).to.equal(after);
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
        await chain().sendTx((o) =>
          c.authorizePayment(id, "localhost", proof.leaf, proof.cap, proof.proof, transferOf(1n), NO_APPROVAL, o),
        ),
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
