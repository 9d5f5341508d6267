import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { JsonRpcProvider, Transaction, Wallet, hexlify, randomBytes } from "ethers";
import { ChainClient } from "../../src/chain/client";
import { encodeCall } from "../../src/chain/contracts";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { RawRpc } from "../../src/chain/rpc/rawRpc";

/** What callers read of an ethers error (its message embeds the request id, which differs). */
function seen(err: unknown): string {
  const e = err as { code?: string; shortMessage?: string; data?: unknown; reason?: unknown; revert?: unknown; info?: { error?: unknown } };
  return JSON.stringify([e.code, e.shortMessage, e.data, e.reason, e.revert, e.info?.error]);
}
const failure = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => "answered",
    (err: unknown) => seen(err),
  );

describe("raw JSON-RPC on the payment path: ethers' provider answers and errors without its machinery", function () {
  let chain: EmbeddedChain;
  let client: ChainClient;
  let server: http.Server;
  let odd: string;
  let requests = 0;
  let limited = 0;

  before(async function () {
    chain = await startEmbeddedChain();
    client = new ChainClient({
      rpcUrl: chain.rpcUrl,
      chainId: chain.chainId,
      operatorPrivateKey: chain.operator.privateKey,
      factoryAddress: chain.addresses.factory,
      usdcAddress: chain.addresses.usdc,
    });
    // A node that fails over HTTP, or answers a receipt ethers would read differently.
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        requests++;
        const parsed = JSON.parse(body) as { method: string; id: number } | { method: string; id: number }[];
        const calls = Array.isArray(parsed) ? parsed : [parsed];
        if (calls.some((c) => c.method === "eth_blockNumber"))
          return void res.writeHead(502, { "Content-Type": "text/plain" }).end("bad gateway");
        // Rate limited twice, then answered.
        if (calls.some((c) => c.method === "eth_accounts") && ++limited % 3 !== 0) {
          return void res.writeHead(429, { "Content-Type": "text/plain", "Retry-After": "1" }).end("slow down");
        }
        const answers = calls.map(({ method, id }) =>
          method === "eth_accounts"
            ? { jsonrpc: "2.0", id, result: [] }
            : method === "eth_getTransactionReceipt"
              ? { jsonrpc: "2.0", id, result: { transactionHash: "0x12", logs: [] } }
              : { jsonrpc: "2.0", id, error: { code: -32601, message: `the method ${method} does not exist` } },
        );
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    odd = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async function () {
    client?.destroy();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await chain?.close();
  });

  it("answers eth_call as provider.call, and a revert with the same call exception (revert data, reason)", async function () {
    const usdc = client.usdc.target as string;
    const holder = Wallet.createRandom().address;
    const balanceOf = encodeCall(client.usdc.interface, "balanceOf", [holder]);
    expect(await client.rpc.call(usdc, balanceOf)).to.equal(await client.provider.call({ to: usdc, data: balanceOf }));
    const reverting = [
      encodeCall(client.usdc.interface, "transferFrom", [holder, holder, 1n]),
      encodeCall(client.usdc.interface, "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)", [
        holder,
        holder,
        1n,
        0n,
        2n ** 40n,
        hexlify(randomBytes(32)),
        hexlify(randomBytes(65)),
      ]),
    ];
    for (const data of reverting) {
      const theirs = await failure(client.provider.call({ to: usdc, data }));
      expect(theirs).to.include("CALL_EXCEPTION");
      expect(await failure(client.rpc.call(usdc.toLowerCase(), data))).to.equal(theirs);
    }
  });

  it("sends raw transactions with ethers' errors (a used nonce is NONCE_EXPIRED), and unknown methods fail alike", async function () {
    await client.waitMined(await client.sendCall(client.usdc, "mint", [Wallet.createRandom().address, 1n]));
    const tx = Transaction.from({
      type: 2,
      chainId: chain.chainId,
      nonce: 0,
      gasLimit: 100_000n,
      maxFeePerGas: 10n ** 10n,
      to: chain.operator.address,
    });
    tx.signature = new Wallet(chain.operator.privateKey).signingKey.sign(tx.unsignedHash);
    const theirs = await failure(client.provider.send("eth_sendRawTransaction", [tx.serialized]));
    expect(theirs).to.include("NONCE_EXPIRED");
    expect(await failure(client.rpc.send("eth_sendRawTransaction", [tx.serialized]))).to.equal(theirs);
    expect(await failure(client.rpc.send("eth_noSuchMethod", []))).to.equal(await failure(client.provider.send("eth_noSuchMethod", [])));
  });

  it("reads a receipt raw to the fields ethers' TransactionReceipt has, and waits on reverted transactions as waitFor does", async function () {
    const to = Wallet.createRandom().address;
    const sent = await client.sendCall(client.usdc, "mint", [to, 5n]);
    const mined = await client.waitMined(sent);
    const theirs = await client.provider.getTransactionReceipt(sent.hash);
    if (!theirs) throw new Error("no receipt");
    expect(mined).to.deep.equal({
      hash: theirs.hash,
      blockNumber: theirs.blockNumber,
      status: theirs.status,
      to: theirs.to,
      from: theirs.from,
      gasUsed: theirs.gasUsed,
      gasPrice: theirs.gasPrice,
      logs: theirs.logs.map((l) => ({ address: l.address.toLowerCase(), topics: [...l.topics], data: l.data })),
    });
    expect(await client.rpc.receipt(hexlify(randomBytes(32)))).to.equal(null);
    // A transfer of more than the operator holds, mined (automining refuses it at the send), reverts on-chain.
    await client.provider.send("evm_setAutomine", [false]);
    const reverted = await client.sendCall(client.usdc, "transfer", [to, 10n ** 30n], { gasLimit: 100_000n });
    await client.provider.send("evm_mine", []);
    await client.provider.send("evm_setAutomine", [true]);
    const ours = await failure(client.waitMined(reverted));
    expect(ours).to.include("CALL_EXCEPTION");
    expect(ours).to.equal(await failure(client.waitFor(reverted)));
  });

  it("fails over HTTP as the provider does: a non-2xx answer, a refused connection, a destroyed provider", async function () {
    const provider = new JsonRpcProvider(odd, 8453, { staticNetwork: true, batchMaxCount: 1 });
    const rpc = new RawRpc(odd, provider);
    const theirs = await failure(provider.send("eth_blockNumber", []));
    expect(theirs).to.include("SERVER_ERROR");
    expect(await failure(rpc.send("eth_blockNumber", []))).to.equal(theirs);
    // A receipt ethers' formatter would refuse is not read here (the client then asks ethers).
    expect(await rpc.receipt(hexlify(randomBytes(32)))).to.equal(undefined);
    // Calls made together go as one batch; each gets its own answer or error.
    requests = 0;
    const together = await Promise.all([
      rpc.receipt(hexlify(randomBytes(32))),
      failure(rpc.send("eth_chainId", [])),
      failure(rpc.send("eth_gasPrice", [])),
    ]);
    expect(requests).to.equal(1);
    expect(together).to.deep.equal([
      undefined,
      await failure(provider.send("eth_chainId", [])),
      await failure(provider.send("eth_gasPrice", [])),
    ]);
    expect(together[1]).to.include("UNSUPPORTED_OPERATION");
    // 429 Too Many Requests: sent again, as ethers does.
    requests = 0;
    expect(await rpc.send("eth_accounts", [])).to.deep.equal([]);
    expect(requests).to.equal(3);
    expect(await provider.send("eth_accounts", [])).to.deep.equal([]);
    // A failed request fails every call in it.
    expect(await Promise.all([failure(rpc.send("eth_blockNumber", [])), failure(rpc.send("eth_chainId", []))])).to.deep.equal([
      theirs,
      theirs,
    ]);
    provider.destroy();
    expect(await failure(rpc.send("eth_blockNumber", []))).to.equal(await failure(provider.send("eth_blockNumber", [])));
    rpc.destroy();

    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    const down = new JsonRpcProvider(url, 8453, { staticNetwork: true, batchMaxCount: 1 });
    const downRpc = new RawRpc(url, down);
    const code = (p: Promise<unknown>) =>
      p.then(
        () => "answered",
        (err: unknown) => (err as { code?: string }).code,
      );
    expect(await code(downRpc.send("eth_blockNumber", []))).to.equal("ECONNREFUSED");
    expect(await code(down.send("eth_blockNumber", []))).to.equal("ECONNREFUSED");
    down.destroy();
    downRpc.destroy();
  });

  it("falls back to one call a request on a node that refuses batches, and answers every call", async function () {
    let batches = 0;
    let singles = 0;
    const noBatch = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        const parsed = JSON.parse(body) as { id: number } | { id: number }[];
        if (Array.isArray(parsed)) {
          batches++;
          return void res
            .writeHead(200)
            .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch not supported" } }));
        }
        singles++;
        res.writeHead(200).end(JSON.stringify({ jsonrpc: "2.0", id: parsed.id, result: `0x${parsed.id.toString(16)}` }));
      });
    });
    await new Promise<void>((resolve) => noBatch.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(noBatch.address() as AddressInfo).port}`;
    const provider = new JsonRpcProvider(url, 8453, { staticNetwork: true, batchMaxCount: 1 });
    const rpc = new RawRpc(url, provider);
    try {
      const first = await Promise.all([1, 2, 3].map(() => rpc.send<string>("eth_blockNumber", [])));
      expect(first.map((h) => Number(h))).to.deep.equal([1, 2, 3]); // each its own answer (the id it was sent with)
      expect([batches, singles]).to.deep.equal([1, 3]);
      await Promise.all([rpc.send("eth_blockNumber", []), rpc.send("eth_blockNumber", [])]);
      expect([batches, singles]).to.deep.equal([1, 5]); // no batch tried again
    } finally {
      rpc.destroy();
      provider.destroy();
      noBatch.closeAllConnections();
      await new Promise((r) => noBatch.close(r));
    }
  });
});
