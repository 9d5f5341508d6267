/**
 * Fuzzes the running service (embedded chain and store, loopback only): generated requests across every route of
 * /openapi.json and the /mcp tools, with valid, invalid and missing keys, odd methods, headers, encodings, bodies
 * and query strings. Prints the 5xx answers, the answers without the error shape, the answers slower than 5 s, and
 * the memory before and after. Bounded in count (FUZZ_REQUESTS, default 12,000) and time.
 *
 *   npm run fuzz
 */
import { request } from "node:http";
import { randomBytes, randomInt } from "node:crypto";
import { gzipSync } from "node:zlib";
import { Wallet } from "ethers";
import pino from "pino";
import { loadConfig } from "../src/config";
import { startService } from "../src/server";

const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 12_000);
const CONCURRENCY = 16;
const SLOW_MS = 5_000;

type Answer = { status: number; body: string; ms: number };

function send(base: URL, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  const started = Date.now();
  return new Promise((resolve) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers: { ...headers, ...(body ? { "Content-Length": String(body.length) } : {}) },
        timeout: 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.length < 64 && chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), ms: Date.now() - started }),
        );
        res.on("error", () => resolve({ status: res.statusCode ?? 0, body: "", ms: Date.now() - started }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err) => resolve({ status: err.message === "timeout" ? 599 : -1, body: "", ms: Date.now() - started }));
    if (body) req.write(body);
    req.end();
  });
}

const pick = <T>(xs: readonly T[]): T => xs[randomInt(xs.length)];

function oddValue(depth = 0): unknown {
  switch (randomInt(14)) {
    case 0:
      return null;
    case 1:
      return randomInt(2) === 1;
    case 2:
      return randomInt(-1e6, 1e6) / pick([1, 3, 1e6]);
    case 3:
      return "x".repeat(pick([0, 1, 300, 70_000]));
    case 4:
      return pick([
        "0x",
        "0x" + "1".repeat(40),
        Wallet.createRandom().address,
        "-1",
        "1e99",
        "0.0000001",
        "NaN",
        "http://127.0.0.1:9/x",
        "javascript:1",
        "__proto__",
      ]);
    case 5:
      return depth < 3 ? Array.from({ length: randomInt(4) }, () => oddValue(depth + 1)) : [];
    case 6:
      return depth < 3 ? { [pick(["$where", "a.b", "__proto__", "constructor", "k"])]: oddValue(depth + 1) } : {};
    case 7:
      return JSON.parse("[".repeat(200) + "]".repeat(200));
    case 8:
      return Number.MAX_SAFE_INTEGER * 10;
    case 9:
      return randomBytes(8).toString("hex");
    default:
      return pick(["1", "0.5", "20", "5", "api.example.com", "*", "approve", "GET", "POST"]);
  }
}

/** A body for a documented schema: its real field names with odd values, sometimes valid-looking, sometimes not. */
function bodyFor(schema: { properties?: Record<string, unknown>; required?: string[] } | undefined, agent: string): unknown {
  const fields = Object.keys(schema?.properties ?? {});
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (randomInt(5) === 0) continue;
    if (f === "agentAddress" && randomInt(2) === 0) out[f] = agent;
    else if (f === "serviceUrl") out[f] = pick(["http://127.0.0.1:9/x", "http://localhost:1/x", "ftp://x", "not a url", "http://[::1]:9/"]);
    else out[f] = oddValue();
  }
  if (randomInt(8) === 0) out[pick(["extra", "__proto__", "$set"])] = oddValue();
  return out;
}

async function main(): Promise<void> {
  const config = loadConfig({
    PORT: "0",
    LOG_LEVEL: "silent",
    RATE_LIMIT_PER_MINUTE: "1000000",
    AUTH_FAILURES_PER_MINUTE: "1000000",
    SELLER_TIMEOUT_MS: "1000",
  });
  const svc = await startService(config, { logger: pino({ level: "silent" }) });
  const base = new URL(svc.url);
  try {
    const openapi = JSON.parse((await send(base, "GET", "/openapi.json", {})).body) as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
      components: { schemas: Record<string, unknown> };
    };
    const genesis = JSON.parse(
      (await send(base, "POST", "/wallet/genesis", { "Content-Type": "application/json" }, Buffer.from(JSON.stringify({ label: "fuzz" }))))
        .body,
    ) as { agentAddress: string; apiKey: string };
    const keys = [
      "",
      `Bearer ${genesis.apiKey}`,
      `bearer  ${genesis.apiKey} `,
      "Bearer sk_" + "0".repeat(64),
      "Basic abc",
      "Bearer",
      `Bearer ${genesis.apiKey}x`,
    ];
    const routes: { method: string; path: string; schema?: { properties?: Record<string, unknown> } }[] = [];
    const resolveRef = (s: unknown) => {
      const ref = (s as { $ref?: string })?.$ref;
      return (ref ? openapi.components.schemas[ref.split("/").pop()!] : s) as { properties?: Record<string, unknown> } | undefined;
    };
    for (const [path, ops] of Object.entries(openapi.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        routes.push({ method: method.toUpperCase(), path, schema: resolveRef(op.requestBody?.content?.["application/json"]?.schema) });
      }
    }
    const mcpTools = ["get_limits", "verify_merchant", "pay", "get_balance", "list_transactions", "get_payment", "nope"];

    if (global.gc) global.gc();
    const before = process.memoryUsage();
    const tally = { sent: 0, fiveHundreds: 0, noShape: 0, slow: 0, closed: 0, byStatus: new Map<number, number>() };
    const samples: string[] = [];
    const one = async () => {
      const r = pick(routes);
      let path = r.path.replace(/\{[^}]+\}|:[a-z]+/gi, () =>
        pick([
          genesis.agentAddress,
          "apr_" + randomBytes(12).toString("hex"),
          "txn_x",
          "%00",
          "..",
          "0x12",
          randomBytes(4).toString("hex"),
        ]),
      );
      if (randomInt(3) === 0)
        path += `?${pick(["address", "status", "limit", "offset", "x"])}=${encodeURIComponent(String(oddValue()))}&${pick(["limit", "offset"])}=${pick(["-1", "1e9", "abc", "50"])}`;
      let method = randomInt(12) === 0 ? pick(["TRACE", "PROPFIND", "M-SEARCH", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]) : r.method;
      const headers: Record<string, string> = {};
      const key = pick(keys);
      if (key) headers.Authorization = key;
      if (randomInt(2) === 0) headers["X-Agent-Address"] = pick([genesis.agentAddress, "0x12", ""]);
      if (randomInt(10) === 0) headers["X-Forwarded-For"] = "1.2.3.4, 5.6.7.8";
      let body: Buffer | undefined;
      if (path === "/mcp" || (randomInt(6) === 0 && method === "POST")) {
        path = "/mcp";
        method = "POST";
        headers.Accept = "application/json, text/event-stream";
        const rpc =
          randomInt(4) === 0
            ? oddValue()
            : {
                jsonrpc: "2.0",
                id: randomInt(1e6),
                method: pick(["tools/call", "tools/list", "initialize", "x"]),
                params: {
                  name: pick(mcpTools),
                  arguments: bodyFor(
                    { properties: { agentAddress: 1, serviceUrl: 1, maxAmount: 1, intent: 1, id: 1, limit: 1, merchant: 1 } },
                    genesis.agentAddress,
                  ),
                },
              };
        body = Buffer.from(JSON.stringify(rpc) ?? "null");
      } else if (["POST", "PUT", "PATCH"].includes(method) || randomInt(10) === 0) {
        const json = Buffer.from(JSON.stringify(bodyFor(r.schema, genesis.agentAddress)) ?? "{}");
        body = randomInt(8) === 0 ? randomBytes(randomInt(1, 200)) : json;
        if (randomInt(8) === 0) {
          headers["Content-Encoding"] = pick(["gzip", "br", "deflate", "zstd"]);
          if (randomInt(2) === 0) body = gzipSync(json);
        }
      }
      if (body)
        headers["Content-Type"] =
          randomInt(10) === 0
            ? pick(["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1"])
            : "application/json";
      const a = await send(base, method, path, headers, body);
      tally.sent++;
      tally.byStatus.set(a.status, (tally.byStatus.get(a.status) ?? 0) + 1);
      // The server may close a connection whose request it refuses before reading it all (431, 413): no answer.
      if (a.status === -1) tally.closed++;
      else if (a.status >= 500 || a.status < 100) {
        tally.fiveHundreds++;
        if (samples.length < 10) samples.push(`${a.status} ${method} ${path.slice(0, 120)} ${a.body.slice(0, 160)}`);
      }
      if (a.ms > SLOW_MS) tally.slow++;
      if (a.status >= 400 && method !== "HEAD" && !(path.startsWith("/sell/") && a.status === 402)) {
        let shaped = false;
        try {
          const b = JSON.parse(a.body) as { error?: unknown; message?: unknown; status?: unknown; jsonrpc?: unknown };
          shaped = (typeof b.error === "string" && typeof b.message === "string" && b.status === a.status) || b.jsonrpc === "2.0";
        } catch {
          shaped = false;
        }
        if (!shaped) {
          tally.noShape++;
          if (samples.length < 10) samples.push(`no shape: ${a.status} ${method} ${path.slice(0, 120)} ${a.body.slice(0, 120)}`);
        }
      }
    };
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (tally.sent < TOTAL && Date.now() - started < 15 * 60_000) await one();
      }),
    );
    if (global.gc) global.gc();
    const after = process.memoryUsage();
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
    console.log(
      `fuzz: ${tally.sent} requests over ${routes.length} documented operations and ${mcpTools.length} MCP tool names in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    console.log(
      `statuses: ${[...tally.byStatus.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([k, v]) => `${k}×${v}`)
        .join(" ")}`,
    );
    console.log(`5xx answers: ${tally.fiveHundreds}`);
    console.log(`answers without the error shape: ${tally.noShape}`);
    console.log(`answers slower than ${SLOW_MS / 1000} s: ${tally.slow}`);
    console.log(`connections the server closed before answering (oversized requests): ${tally.closed}`);
    console.log(
      `memory: rss ${mib(before.rss)} -> ${mib(after.rss)}, heap used ${mib(before.heapUsed)} -> ${mib(after.heapUsed)}${global.gc ? " (after gc)" : ""}`,
    );
    for (const s of samples) console.log(`  ${s}`);
    if (tally.fiveHundreds || tally.noShape || tally.slow) process.exitCode = 1;
  } finally {
    await svc.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
