/**
 * The indexer's cursor against the real stack: restarts, a store shared by two instances, confirmation depth, a re-org
 * and the polling loop.
 */
import { expect } from "chai";
import type { Wallet } from "ethers";
import { INDEXER_NAME } from "../../src/indexer/indexer";
import { randomOwner, type Stack } from "../helpers/stack";
import { quietLogger, randomId, useIndexerStack, type IndexerAgent } from "../helpers/indexerFixture";

describe("indexer: cursor, restarts and re-orgs", () => {
  const fx = useIndexerStack();
  const { chain, store, rpc, freshStore, indexer, authorize, fundedWallet, ledgerEntry, signedTransfer } = fx;
  let s: Stack;
  let owner: Wallet;
  let agent: IndexerAgent;
  before(() => {
    ({ s, owner, agent } = fx);
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
    const paused = await (
      await chain().policyAt(agent.policyContract, relayer).setPaused(true, pause.epoch, pause.timestamp, pause.signature)
    ).wait();
    expect(await s.svc.indexer.syncOnce()).to.equal(2);
    const keys = { txHash: { $in: [transfer!.hash, paused!.hash] } };
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

  it("reorg: a transaction of two events mined again further into a block keeps each event's own name and args", async () => {
    await s.svc.indexer.syncOnce();
    // One transaction, two policy events: a stranger relays the owner's pause and resume through Multicall3.
    const at = s.now() + 10;
    const [pause, resume] = [
      await s.signPause(owner, agent.agentAddress, true, at),
      // The resume names the epoch the pause before it starts.
      await s.signPause(owner, agent.agentAddress, false, at + 1, Number(await chain().policyAt(agent.policyContract).epoch()) + 1),
    ];
    const policy = chain().policyAt(agent.policyContract);
    const calls = [pause, resume].map((x, i) => ({
      target: agent.policyContract,
      allowFailure: false,
      callData: policy.interface.encodeFunctionData("setPaused", [i === 0, x.epoch, x.timestamp, x.signature]),
    }));
    const relayer = await fundedWallet();
    const raw = await relayer.signTransaction(
      await relayer.populateTransaction({ ...(await chain().multicall.aggregate3.populateTransaction(calls)), gasLimit: 500_000n }),
    );
    const snapshot = await rpc("evm_snapshot");
    const first = await (await chain().provider.broadcastTransaction(raw)).wait();
    expect(await s.svc.indexer.syncOnce()).to.equal(2);
    const argsOf = async () =>
      (await store().chainEvents.find({ txHash: first!.hash, removed: false }).sort({ logIndex: 1 }).toArray()).map((e) => [
        e.event,
        e.args.paused,
      ]);
    expect(await argsOf()).to.deep.equal([
      ["PausedSet", true],
      ["PausedSet", false],
    ]);

    // The reorg: the same transaction in a block where another one's log comes first, so its logs move one place on.
    expect(await rpc("evm_revert", [snapshot])).to.equal(true);
    await rpc("evm_setAutomine", [false]);
    try {
      const other = await fundedWallet();
      // USDC approve: exactly one log (Approval), sent first with the higher tip.
      await other.sendTransaction({
        to: chain().usdc.target,
        data: chain().usdc.interface.encodeFunctionData("approve", [other.address, 1n]),
        gasLimit: 100_000n,
        maxPriorityFeePerGas: 10n ** 10n,
        maxFeePerGas: 10n ** 11n,
      });
      await chain().provider.broadcastTransaction(raw);
      await rpc("evm_mine");
    } finally {
      await rpc("evm_setAutomine", [true]);
    }
    const again = (await chain().provider.getTransactionReceipt(first!.hash))!;
    expect(again.logs.map((l) => l.index)).to.deep.equal(first!.logs.map((l) => l.index + 1));
    await s.svc.indexer.syncOnce();
    expect(await argsOf()).to.deep.equal([
      ["PausedSet", true],
      ["PausedSet", false],
    ]);
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
});
