import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { viem } from "../../src/chain/viem";
import { nodeHttpTransport } from "../../src/chain/rpc/rpcTransport";

const { createPublicClient, http: viemHttp } = viem;

/** A JSON-RPC server whose answer depends on the method asked. */
function answer(method: string, id: number, res: http.ServerResponse): void {
  const json = (status: number, body: unknown) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (method === "eth_blockNumber") {
    json(200, { jsonrpc: "2.0", id, result: "0x2a" });
    return;
  }
  if (method === "eth_chainId") {
    json(200, { jsonrpc: "2.0", id, result: "0x2105" });
    return;
  }
  if (method === "eth_call") {
    json(200, { jsonrpc: "2.0", id, error: { code: 3, message: "execution reverted: no", data: "0x08c379a0" + "00".repeat(96) } });
    return;
  }
  if (method === "eth_gasPrice") {
    json(429, { jsonrpc: "2.0", id, error: { code: -32005, message: "rate limited" } });
    return;
  }
  if (method === "eth_getBalance") {
    res.writeHead(502, { "Content-Type": "text/plain" });
    return void res.end("bad gateway ✗");
  }
  if (method === "eth_hang") return; // never answered
  if (method === "eth_getCode") {
    json(200, { jsonrpc: "2.0", id, result: "0x" + "ab".repeat(5_000) });
    return;
  }
  res.destroy();
}

describe("the facilitator's JSON-RPC transport (node:http): viem answers and fails as with its own HTTP transport", function () {
  let server: http.Server;
  let url: string;

  before(async function () {
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        const { method, id } = JSON.parse(body) as { method: string; id: number };
        answer(method, id, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async function () {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** The facilitator's transport (nodeHttpTransport), next to viem's own over the global fetch. */
  const transports = (timeout = 10_000) => [
    createPublicClient({ transport: viemHttp(url, { retryCount: 0, timeout }) }),
    createPublicClient({ transport: nodeHttpTransport(viem, url, { retryCount: 0, timeout }) }),
  ];

  /** What a failure looks like to a caller: its class name, short message, and the cause's status and details. */
  const failure = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (err) {
      const e = err as { name: string; shortMessage?: string; details?: string; status?: number; walk(): { name: string; data?: unknown } };
      const inner = e.walk();
      return JSON.stringify([e.name, e.shortMessage, e.details, e.status, inner.name, inner.data]);
    }
    return "answered";
  };

  it("answers results and long bodies, and fails as viem's own transport on reverts, non-2xx, drops, timeouts and refusals", async function () {
    const [viaViem, viaNode] = transports();
    expect(await viaNode.getBlockNumber({ cacheTime: 0 })).to.equal(42n);
    expect(await viaNode.getChainId()).to.equal(await viaViem.getChainId());
    expect(await viaNode.getCode({ address: `0x${"11".repeat(20)}` })).to.equal("0x" + "ab".repeat(5_000));
    const to = `0x${"22".repeat(20)}` as const;
    for (const [what, call] of [
      ["revert", (c: typeof viaNode) => c.call({ to, data: "0x" })],
      ["429 with a JSON-RPC error", (c: typeof viaNode) => c.getGasPrice()],
      ["502 text", (c: typeof viaNode) => c.getBalance({ address: to })],
      ["connection dropped", (c: typeof viaNode) => c.getTransactionCount({ address: to })],
    ] as const) {
      const expected = await failure(call(viaViem));
      expect(expected, what).to.not.equal("answered");
      const got = await failure(call(viaNode));
      if (what === "connection dropped")
        expect((JSON.parse(got) as unknown[]).slice(0, 2)).to.deep.equal((JSON.parse(expected) as unknown[]).slice(0, 2));
      else expect(got, what).to.equal(expected);
    }
    const [slowViem, slowNode] = transports(200);
    const hang = (c: typeof viaNode) => c.request({ method: "eth_hang" } as never);
    expect(await failure(hang(slowNode))).to.equal(await failure(hang(slowViem)));
    expect(await failure(hang(slowNode))).to.match(/TimeoutError/);
    const closed = await new Promise<string>((resolve) => {
      const s = http.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(`http://127.0.0.1:${port}`));
      });
    });
    const refused = createPublicClient({ transport: nodeHttpTransport(viem, closed, { retryCount: 0, timeout: 1_000 }) });
    expect(JSON.parse(await failure(refused.getBlockNumber()))[0]).to.equal("HttpRequestError");
  });
});
