import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { viem } from "../../src/chain/viem";
import { rpcFetch } from "../../src/chain/rpcFetch";

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
  if (method === "eth_getCode") {
    json(200, { jsonrpc: "2.0", id, result: "0x" + "ab".repeat(5_000) });
    return;
  }
  res.destroy();
}

describe("the facilitator's JSON-RPC fetch (node:http): viem answers and fails as with the global fetch", function () {
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

  const clients = (opts: { maxResponseBodySize?: number } = {}) =>
    [undefined, rpcFetch()].map((fetchFn) => createPublicClient({ transport: viemHttp(url, { retryCount: 0, fetchFn, ...opts }) }));

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

  it("answers results, JSON-RPC errors, non-2xx answers (JSON or not) and long bodies as the global fetch does", async function () {
    const [viaFetch, viaNode] = clients();
    expect(await viaNode.getBlockNumber({ cacheTime: 0 })).to.equal(await viaFetch.getBlockNumber({ cacheTime: 0 }));
    expect(await viaNode.getBlockNumber({ cacheTime: 0 })).to.equal(42n);
    expect(await viaNode.getCode({ address: `0x${"11".repeat(20)}` })).to.equal("0x" + "ab".repeat(5_000));
    const to = `0x${"22".repeat(20)}` as const;
    for (const [what, call] of [
      ["revert", (c: typeof viaNode) => c.call({ to, data: "0x" })],
      ["429 with a JSON-RPC error", (c: typeof viaNode) => c.getGasPrice()],
      ["502 text", (c: typeof viaNode) => c.getBalance({ address: to })],
      ["connection dropped", (c: typeof viaNode) => c.getTransactionCount({ address: to })],
    ] as const) {
      const expected = await failure(call(viaFetch));
      expect(expected, what).to.not.equal("answered");
      const got = await failure(call(viaNode));
      // A dropped connection is an HttpRequestError either way; only the low-level cause's words differ.
      if (what === "connection dropped")
        expect((JSON.parse(got) as unknown[]).slice(0, 2)).to.deep.equal((JSON.parse(expected) as unknown[]).slice(0, 2));
      else expect(got, what).to.equal(expected);
    }
    const [smallFetch, smallNode] = clients({ maxResponseBodySize: 1_000 });
    const code = (c: typeof viaNode) => c.getCode({ address: to });
    expect(await failure(code(smallNode))).to.equal(await failure(code(smallFetch)));
    expect(await failure(code(smallNode))).to.match(/ResponseBodyTooLarge|too large/i);
  });

  it("fails to connect as the global fetch does, and refuses an aborted signal or a body it cannot send", async function () {
    const closed = await new Promise<string>((resolve) => {
      const s = http.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(`http://127.0.0.1:${port}`));
      });
    });
    const [viaFetch, viaNode] = [undefined, rpcFetch()].map((fetchFn) =>
      createPublicClient({ transport: viemHttp(closed, { retryCount: 0, fetchFn }) }),
    );
    const [a, b] = [await failure(viaFetch.getBlockNumber()), await failure(viaNode.getBlockNumber())];
    expect(JSON.parse(b)[0]).to.equal("HttpRequestError");
    expect(JSON.parse(b)[0]).to.equal(JSON.parse(a)[0]);

    const fetchFn = rpcFetch();
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await fetchFn(url, { method: "POST", body: "{}", signal: controller.signal }).then(
      () => expect.fail("sent with an aborted signal"),
      (err: unknown) => expect(String(err)).to.match(/stop/),
    );
    await fetchFn(url, { method: "POST", body: new Uint8Array([1]) }).then(
      () => expect.fail("sent a body it does not handle"),
      (err: unknown) => expect(String(err)).to.match(/string bodies/),
    );
  });
});
