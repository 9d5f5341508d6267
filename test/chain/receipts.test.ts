/**
 * The receipt watch (src/chain/receipts.ts) on the real chain: blocks are mined by hand (automine off) so the test
 * decides when a transaction is included; the watch's ticks are a few milliseconds apart.
 */
import { expect } from "chai";
import { JsonRpcProvider, Wallet, type TransactionReceipt } from "ethers";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { ReceiptWatcher } from "../../src/chain/receipts";

describe("receipt watch: one loop for every transaction waited for", function () {
  this.timeout(60_000);
  let chain: EmbeddedChain;
  let provider: JsonRpcProvider;
  let sender: Wallet;
  let nonce: number;
  const calls = new Map<string, number>();
  const rpc = (method: string, params: unknown[]) => {
    calls.set(method, (calls.get(method) ?? 0) + 1);
    return provider.send(method, params);
  };
  const count = (method: string) => calls.get(method) ?? 0;

  before(async () => {
    chain = await startEmbeddedChain();
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    sender = new Wallet(chain.operator.privateKey, provider);
    nonce = await provider.getTransactionCount(sender.address, "pending");
  });
  afterEach(async () => {
    await provider.send("evm_setAutomine", [true]);
    calls.clear();
  });
  after(async () => {
    provider?.destroy();
    await chain?.close();
  });

  /** Sends `n` transfers of 1 wei (not mined while automine is off); their hashes. */
  const sendMany = async (n: number) => {
    const to = Wallet.createRandom().address;
    const sent = [];
    for (let i = 0; i < n; i++) sent.push(await sender.sendTransaction({ to, value: 1n, nonce: nonce++, gasLimit: 21_000n }));
    return sent.map((t) => t.hash);
  };
  const fetcher = (hash: string) => () => {
    calls.set("receipt", count("receipt") + 1);
    return provider.getTransactionReceipt(hash);
  };
  /** Resolves once the watcher has `n` waiters. */
  const waitersReach = async (w: ReceiptWatcher, n: number) => {
    while (w.waiting < n) await new Promise((r) => setImmediate(r));
  };

  it("an automining node: the receipt at once, no block read", async () => {
    const w = new ReceiptWatcher(rpc, { intervalMs: 5 });
    const [hash] = await sendMany(1);
    const receipt = await w.wait(hash, fetcher(hash));
    expect(receipt?.hash).to.equal(hash);
    expect(count("receipt")).to.equal(1);
    expect(w.blockReads).to.equal(0);
    expect(w.immediate, "the node mined it as it came").to.equal(true);
  });

  it("many waiting: one block read a tick, and each receipt asked for only when its block came", async () => {
    await provider.send("evm_setAutomine", [false]);
    const w = new ReceiptWatcher(rpc, { intervalMs: 5, directLimit: 4, recheckMs: 60_000 });
    const hashes = await sendMany(12);
    const waits = hashes.map((h) => w.wait(h, fetcher(h), 30_000));
    await waitersReach(w, 12);
    // Ticks pass with nothing mined: the loop reads blocks; past the loop's fresh start (everyone asks once more: it
    // cannot know which blocks a waiter's first ask saw) the waiters ask nothing more.
    const ticks = (n: number) => {
      const target = w.blockReads + n;
      return (async () => {
        while (w.blockReads < target) await new Promise((r) => setTimeout(r, 5));
      })();
    };
    await ticks(2);
    const asked = count("receipt");
    expect(asked).to.be.at.most(24);
    await ticks(10);
    expect(count("receipt"), "no asks while nothing is mined").to.equal(asked);
    await provider.send("evm_mine", []);
    const receipts = (await Promise.all(waits)) as TransactionReceipt[];
    expect(receipts.map((r) => r.hash)).to.deep.equal(hashes);
    expect(count("receipt"), "one more ask each, once mined").to.equal(asked + 12);
    expect(w.waiting).to.equal(0);
    expect(w.immediate, "these waited for their block").to.equal(false);
  });

  it("a block mined between two ticks and another after it: the earlier one is read too", async () => {
    await provider.send("evm_setAutomine", [false]);
    // Ticks 100 ms apart: both blocks are mined well within one pause, so the loop next reads the empty one as latest.
    const w = new ReceiptWatcher(rpc, { intervalMs: 100, directLimit: 0, recheckMs: 60_000 });
    const [first] = await sendMany(1);
    const firstWait = w.wait(first, fetcher(first), 5_000);
    await waitersReach(w, 1);
    const reads = w.blockReads;
    while (w.blockReads < reads + 2) await new Promise((r) => setTimeout(r, 5)); // the loop has read the latest block
    const asked = count("receipt");
    // Two blocks at once: the first includes the transaction, the second is empty (the latest when the loop reads).
    await provider.send("evm_mine", []);
    await provider.send("evm_mine", []);
    const receipt = await firstWait;
    expect(receipt?.hash).to.equal(first);
    expect(count("receipt"), "woken by the earlier block").to.equal(asked + 1);
    expect(w.blockReads - reads, "at the next tick, not at a recheck or the time limit").to.be.at.most(5);
  });

  it("gives up past its time limit (null), and a waiter that never gets a block still asks every recheck", async () => {
    await provider.send("evm_setAutomine", [false]);
    const w = new ReceiptWatcher(rpc, { intervalMs: 5, directLimit: 0, recheckMs: 20 });
    const [hash] = await sendMany(1);
    expect(await w.wait(hash, fetcher(hash), 150)).to.equal(null);
    expect(count("receipt"), "asked again on rechecks").to.be.greaterThan(2);
    expect(w.waiting).to.equal(0);
    await provider.send("evm_mine", []); // leaves nothing pending for the next test
  });
});
