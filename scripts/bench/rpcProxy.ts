/**
 * A loopback JSON-RPC proxy for benchmarks: delays every call by `latencyMs` (a remote node's round trip) before
 * passing it to the chain, and counts calls by method, so both sides of a comparison pay the same latency and their
 * round trips can be counted where they happen. Tests also use it to hold one call (an instance that stalls).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RpcProxy {
  url: string;
  /** Calls by method since the last reset (a batch counts each of its calls). */
  counts: Map<string, number>;
  total(): number;
  reset(): void;
  setLatency(ms: number): void;
  /** Holds the next call of `method` until the returned function (resolved once it arrives) is called. */
  holdNext(method: string): Promise<() => void>;
  close(): Promise<void>;
}

export async function startRpcProxy(target: string, latencyMs = 0): Promise<RpcProxy> {
  const counts = new Map<string, number>();
  let latency = latencyMs;
  let hold: { method: string; arrived: (release: () => void) => void } | null = null;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const methods: string[] = [];
      try {
        const parsed = JSON.parse(body.toString()) as { method?: string } | { method?: string }[];
        for (const call of Array.isArray(parsed) ? parsed : [parsed]) methods.push(call.method ?? "?");
      } catch {
        methods.push("?");
      }
      for (const m of methods) counts.set(m, (counts.get(m) ?? 0) + 1);
      const held = hold;
      if (held && methods.includes(held.method)) {
        hold = null;
        await new Promise<void>((release) => held.arrived(release));
      }
      if (latency > 0) await new Promise((r) => setTimeout(r, latency));
      try {
        const upstream = await fetch(target, { method: "POST", headers: { "Content-Type": "application/json" }, body });
        const text = await upstream.text();
        res.writeHead(upstream.status, { "Content-Type": "application/json" }).end(text);
      } catch (err) {
        res
          .writeHead(502, { "Content-Type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: String(err) } }));
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => counts.clear(),
    setLatency: (ms) => (latency = ms),
    holdNext: (method) => new Promise((arrived) => (hold = { method, arrived })),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
