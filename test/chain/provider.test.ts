/**
 * The service's JSON-RPC provider (src/chain/rpc/provider.ts) against ethers' own on the real chain: the same answers and
 * the same errors, without ethers' timer before each request.
 */
import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Contract, JsonRpcProvider, Wallet, isError } from "ethers";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { ImmediateJsonRpcProvider } from "../../src/chain/rpc/provider";

describe("JSON-RPC provider: each request sent as it is made", function () {
  this.timeout(60_000);
  let chain: EmbeddedChain;
  let ethersOwn: JsonRpcProvider;
  let ours: ImmediateJsonRpcProvider;
  const options = (chainId: number) => ({ staticNetwork: true, cacheTimeout: -1, batchMaxCount: 1, chainId });

  before(async () => {
    chain = await startEmbeddedChain();
    ethersOwn = new JsonRpcProvider(chain.rpcUrl, chain.chainId, options(chain.chainId));
    ours = new ImmediateJsonRpcProvider(chain.rpcUrl, chain.chainId, options(chain.chainId));
  });
  after(async () => {
    ethersOwn?.destroy();
    ours?.destroy();
    await chain?.close();
  });

  /** Runs `fn` and gives the delays of the timers ethers' JSON-RPC provider set meanwhile. */
  async function providerTimers(fn: () => Promise<unknown>): Promise<number[]> {
    const set = globalThis.setTimeout;
    const delays: number[] = [];
    globalThis.setTimeout = ((cb: () => void, ms?: number, ...rest: unknown[]) => {
      if (new Error().stack?.includes("provider-jsonrpc")) delays.push(ms ?? 0);
      return set(cb, ms, ...rest);
    }) as typeof setTimeout;
    try {
      await fn();
    } finally {
      globalThis.setTimeout = set;
    }
    return delays;
  }

  it("answers without a timer before the request (ethers waits for one on every call)", async () => {
    expect(await providerTimers(() => ethersOwn.getBlockNumber())).to.not.deep.equal([]);
    expect(await providerTimers(() => ours.getBlockNumber())).to.deep.equal([]);
    expect(await providerTimers(() => ours.send("eth_chainId", []))).to.deep.equal([]);
  });

  it("gives the same answers as ethers' provider", async () => {
    const usdc = chain.addresses.usdc;
    for (const p of [ethersOwn, ours]) expect(await p.send("eth_chainId", [])).to.equal("0x2105");
    const [a, b] = await Promise.all([ethersOwn.getBalance(chain.operator.address), ours.getBalance(chain.operator.address)]);
    expect(b).to.equal(a);
    expect(await ours.getCode(usdc)).to.equal(await ethersOwn.getCode(usdc));
    const block = await ethersOwn.getBlock("latest");
    expect((await ours.getBlock(block!.number))?.hash).to.equal(block!.hash);
  });

  it("raises the node's refusals as ethers does: revert data of a call, a nonce too low", async () => {
    const abi = ["function transfer(address to, uint256 amount) returns (bool)"];
    const stranger = Wallet.createRandom().address;
    const revertOf = async (p: JsonRpcProvider) => {
      const usdc = new Contract(chain.addresses.usdc, abi, p);
      return usdc.transfer.staticCall(chain.operator.address, 1n, { from: stranger }).then(
        () => expect.fail("the transfer of a wallet without USDC must revert"),
        (err: unknown) => err,
      );
    };
    const [theirs, mine] = await Promise.all([revertOf(ethersOwn), revertOf(ours)]);
    expect(isError(mine, "CALL_EXCEPTION")).to.equal(true);
    expect(isError(theirs, "CALL_EXCEPTION")).to.equal(true);
    expect((mine as { data: string }).data).to.equal((theirs as { data: string }).data);
    expect((mine as Error).message).to.equal((theirs as Error).message);

    const sender = new Wallet(chain.operator.privateKey, ours);
    const nonce = await ours.getTransactionCount(sender.address, "latest");
    await (await sender.sendTransaction({ to: stranger, value: 1n, nonce })).wait();
    const stale = await sender.signTransaction(await sender.populateTransaction({ to: stranger, value: 1n, nonce }));
    const refusals = await Promise.all(
      [ethersOwn, ours].map((p) =>
        p.broadcastTransaction(stale).then(
          () => expect.fail("a used nonce must be refused"),
          (e: unknown) => e,
        ),
      ),
    );
    expect(isError(refusals[1], "NONCE_EXPIRED")).to.equal(isError(refusals[0], "NONCE_EXPIRED"));
    expect((refusals[1] as Error).message).to.equal((refusals[0] as Error).message);
  });

  it("refuses an answer that is not the request's (BAD_DATA), as ethers does", async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => res.end(JSON.stringify([{ jsonrpc: "2.0", id: 999_999, result: "0x1" }])));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const p = new ImmediateJsonRpcProvider(url, 8453, options(8453));
    try {
      const err = await p.send("eth_blockNumber", []).then(
        () => null,
        (e: unknown) => e,
      );
      expect(isError(err, "BAD_DATA"), String(err)).to.equal(true);
    } finally {
      p.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
