import { expect } from "chai";
import { JsonRpcProvider, Wallet } from "ethers";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/chain/embedded";
import { ChainClient } from "../../src/chain/client";
import { startRpcProxy, type RpcProxy } from "../../scripts/bench/rpcProxy";

describe("operator sends: raw broadcasts, one nonce count, fee data kept on a chain whose base fee is 0", function () {
  let chain: EmbeddedChain;
  let proxy: RpcProxy;
  let provider: JsonRpcProvider;
  let client: ChainClient;

  before(async function () {
    chain = await startEmbeddedChain();
    proxy = await startRpcProxy(chain.rpcUrl);
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    // Every call of the client goes through the counting proxy.
    client = new ChainClient({
      rpcUrl: proxy.url,
      chainId: chain.chainId,
      operatorPrivateKey: chain.operator.privateKey,
      factoryAddress: chain.addresses.factory,
      usdcAddress: chain.addresses.usdc,
    });
  });

  after(async function () {
    client?.destroy();
    provider?.destroy();
    await proxy?.close();
    await chain?.close();
  });

  it("sends calls concurrently with consecutive nonces, asking for neither block number nor fee data per send", async function () {
    expect((await provider.getBlock("latest"))?.baseFeePerGas).to.equal(0n);
    const to = Wallet.createRandom().address;
    await client.waitFor(await client.sendCall(client.usdc, "mint", [to, 1n])); // the nonce and fee data, read once
    proxy.reset();
    const sent = await Promise.all([1n, 2n, 3n, 4n].map((n) => client.sendCall(client.usdc, "mint", [to, n])));
    const receipts = await Promise.all(sent.map((tx) => client.waitFor(tx)));
    expect(receipts.every((r) => r.status === 1)).to.equal(true);
    expect(receipts.map((r) => r.hash)).to.deep.equal(sent.map((tx) => tx.hash));
    expect(await client.usdc.balanceOf(to)).to.equal(11n);
    expect(proxy.counts.get("eth_sendRawTransaction")).to.equal(4);
    expect(proxy.counts.get("eth_getTransactionCount") ?? 0).to.equal(0);
    expect(proxy.counts.get("eth_blockNumber") ?? 0).to.equal(0);
    // Refreshed beside the sends every 2 s: a slow run may see one refresh, never one per send.
    expect(proxy.counts.get("eth_gasPrice") ?? 0).to.be.at.most(1);
  });

  it("after a refused send, asks the node for the nonce again and the next send goes through", async function () {
    const to = Wallet.createRandom().address;
    const used = await provider.getTransactionCount(chain.operator.address, "pending");
    await provider.send("hardhat_setNonce", [chain.operator.address, `0x${(used + 2).toString(16)}`]);
    let refused: unknown = null;
    await client.sendCall(client.usdc, "mint", [to, 1n]).catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/nonce/i);
    const receipt = await client.waitFor(await client.sendCall(client.usdc, "mint", [to, 2n]));
    expect(receipt.status).to.equal(1);
    expect(await client.usdc.balanceOf(to)).to.equal(2n);
  });
});
