import { expect } from "chai";
import { JsonRpcProvider, Wallet } from "ethers";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { ChainClient } from "../../src/chain/client";
import { readOf } from "../../src/chain/contracts";
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

  it("signs a call with a gas limit to the very bytes ethers' populate and sign make, and sends it without estimating", async function () {
    const to = Wallet.createRandom().address;
    const o = { nonce: 7, maxFeePerGas: 3_000_000_000n, maxPriorityFeePerGas: 1_000_000n };
    for (const args of [
      [to, 5n],
      [to.toLowerCase(), 2n ** 200n],
    ]) {
      const populated = await client.usdc
        .getFunction("mint")
        .populateTransaction(...(args as [string, bigint]), { gasLimit: 90_000n, ...o });
      const viaEthers = await client.operator.signTransaction(await client.operator.populateTransaction(populated));
      expect(client.signCall(client.usdc, "mint", args, { gasLimit: 90_000n }, o)).to.equal(viaEthers);
    }
    // What ethers must complete itself is left to it.
    expect(client.signCall(client.usdc, "mint", [to, 1n], {}, o)).to.equal(undefined);
    expect(client.signCall(client.usdc, "mint", [to, 1n], { gasLimit: 90_000n }, { nonce: 1 })).to.equal(undefined);
    expect(client.signCall(client.usdc, "mint", [to, 1n], { gasLimit: 90_000n, value: 1n }, o)).to.equal(undefined);
    expect(() => client.signCall(client.usdc, "mint", ["not an address", 1n], { gasLimit: 90_000n }, o)).to.throw();

    proxy.reset();
    const receipt = await client.waitFor(await client.sendCall(client.usdc, "mint", [to, 3n], { gasLimit: 90_000n }));
    expect(receipt.status).to.equal(1);
    expect((await provider.getTransaction(receipt.hash))?.gasLimit).to.equal(90_000n);
    expect(await client.usdc.balanceOf(to)).to.equal(3n);
    expect(proxy.counts.get("eth_estimateGas") ?? 0).to.equal(0);
  });

  it("readMany answers what each call answers alone, null for a failed call or an address without code, in one eth_call", async function () {
    const holder = Wallet.createRandom().address;
    await client.waitFor(await client.sendCall(client.usdc, "mint", [holder, 123n]));
    const policy = client.policyAt(Wallet.createRandom().address, client.provider); // no code there
    proxy.reset();
    const [balance, name, decimals, eth, none, failed] = await client.readMany([
      readOf(client.usdc, "balanceOf", holder),
      readOf(client.usdc, "name"),
      readOf(client.usdc, "decimals"),
      readOf(client.multicall, "getEthBalance", chain.operator.address),
      readOf(policy, "paused"),
      // A revert: more than the allowance can move.
      {
        ...readOf(client.usdc, "allowance", holder, holder),
        callData: client.usdc.interface.encodeFunctionData("transferFrom", [holder, holder, 1n]),
      },
    ]);
    expect(proxy.counts.get("eth_call")).to.equal(1);
    expect(balance).to.equal(await client.usdc.balanceOf(holder));
    expect(balance).to.equal(123n);
    expect(name).to.equal(await client.usdc.name());
    expect(decimals).to.equal(6n);
    expect(eth).to.equal(await provider.getBalance(chain.operator.address));
    expect(none).to.equal(null);
    expect(failed).to.equal(null);
  });

  it("when another sender took its nonce, asks the node for the count again and sends once more, instead of failing", async function () {
    const to = Wallet.createRandom().address;
    const used = await provider.getTransactionCount(chain.operator.address, "pending");
    // The key sent elsewhere (another process given it, or whoever stole it): the node's count moved on.
    await provider.send("hardhat_setNonce", [chain.operator.address, `0x${(used + 2).toString(16)}`]);
    const first = await client.waitFor(await client.sendCall(client.usdc, "mint", [to, 1n]));
    expect(first.status).to.equal(1);
    const receipt = await client.waitFor(await client.sendCall(client.usdc, "mint", [to, 2n]));
    expect(receipt.status).to.equal(1);
    expect(await client.usdc.balanceOf(to)).to.equal(3n);
  });
});
