/**
 * Every declared operation against the running service: its documented auth, input schema and error statuses are
 * what it does. The walk is driven by the declarations themselves (src/http/operations.ts), so a new operation is
 * checked without touching this file; statuses that need a particular situation are driven in operations.drive.ts.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import type { Wallet } from "ethers";
import type { z } from "zod";
import { documented, errorsByStatus, inputPart } from "../../src/docs/openapi";
import type { AnyOperation } from "../../src/api/operation";
import { OPERATIONS } from "../../src/http/operations";
import { ownerKey } from "../helpers/owner";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { NOT_DRIVEN, drivers, type Observe } from "./operations.drive";

const SRC = join(__dirname, "../../src");
const TOKEN = "registrar-token-for-the-operations-walk";
const SIG = "0x" + "11".repeat(65);
const ADDRESS = "0x1111111111111111111111111111111111111111";

/** A body each signed operation accepts by its schema (the signature itself is wrong; the schema does not know). */
function sampleBody(op: AnyOperation, s: Stack, agent: string): unknown {
  const now = s.now();
  const bodies: Record<string, unknown> = {
    "POST /agents/:address/pause": { paused: true, humanSignature: SIG, timestamp: now },
    "POST /agents/:address/withdraw": { token: "USDC", to: ADDRESS, amount: "1", humanSignature: SIG, timestamp: now },
    "POST /agents/:address/owner": { newOwner: ADDRESS, humanSignature: SIG, timestamp: now },
    "POST /approvals/:id/approve": { humanSignature: SIG, timestamp: now },
    "POST /approvals/:id/deny": { humanSignature: SIG, timestamp: now },
    "POST /pay": { agentAddress: agent, serviceUrl: "http://127.0.0.1:1/x", maxAmount: "1", intent: "walk" },
  };
  return bodies[`${op.method} ${op.path}`];
}

/** The operation's path with well-formed parameters (the onboarded agent, ids of the right form). */
function concretePath(op: AnyOperation, agent: string): string {
  return op.path
    .replace(":address", agent)
    .replace(
      ":id",
      op.path.startsWith("/approvals")
        ? "apr_" + "0".repeat(24)
        : op.path.startsWith("/ledger")
          ? "txn_" + "0".repeat(24)
          : "whk_" + "0".repeat(24),
    )
    .replace(":name", "no-such-asset.js");
}

describe("operations: every declaration's auth, schemas and errors equal the running service's behaviour", () => {
  let s: Stack;
  let owner: Wallet;
  let agent: { agentAddress: string; apiKey: string };
  let keys: { agent: string; owner: string; registrar: string };
  const ops = documented(OPERATIONS);
  /** `METHOD path status` pairs seen answered, with a documented code. */
  const seen = new Set<string>();

  const observe: Observe = (op, res, status, code) => {
    expect(res.status, `${op.method} ${op.path}: ${JSON.stringify(res.body)}`).to.equal(status);
    expect(res.body, `${op.method} ${op.path}`).to.include({ error: code, status });
    expect(res.body.message, `${op.method} ${op.path}`).to.be.a("string").and.not.equal("");
    const documentedCodes = errorsByStatus(op).get(status) ?? [];
    expect(documentedCodes, `${op.method} ${op.path} answers ${status} ${code}, which it does not document`).to.include(code);
    seen.add(`${op.method} ${op.path} ${status}`);
  };
  const call = (
    op: AnyOperation,
    opts: { key?: string; body?: unknown; query?: string; path?: string; headers?: Record<string, string> } = {},
  ) =>
    s.api(op.method, (opts.path ?? concretePath(op, agent.agentAddress)) + (opts.query ?? ""), {
      key: opts.key,
      body: opts.body ?? (op.method === "POST" ? {} : undefined),
      headers: opts.headers,
    });

  before(async () => {
    s = await startStack({
      REGISTRATION_TOKEN: TOKEN,
      RATE_LIMIT_PER_MINUTE: "100000",
      AUTH_FAILURES_PER_MINUTE: "100000",
      SELLER_TIMEOUT_MS: "800",
    });
    owner = randomOwner();
    agent = await s.onboard(owner);
    keys = { agent: agent.apiKey, owner: await ownerKey(s, owner), registrar: TOKEN };
  });
  after(async () => s?.close());

  it("walks a declaration of every kind (the list is the service's)", () => {
    const modes = new Set(ops.map((op) => op.auth));
    for (const mode of ["none", "agent", "owner", "either", "registrar", "x402", "mcp"]) expect(modes, mode).to.include(mode);
    expect(ops.find((op) => op.path === "/pay")?.auth).to.equal("agent");
  });

  it("handlers read only their parsed input: no raw params, query or body, and no cast of input, under src/http or src/mcp", () => {
    const files = [join(SRC, "http/routes"), join(SRC, "mcp")].flatMap((dir) => readdirSync(dir).map((f) => join(dir, f)));
    expect(files.length).to.be.greaterThan(12);
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      expect(text, file).not.to.match(/ctx\.(params|query|request\.body)|state\.input|input(\.\w+)* as /);
    }
  });

  it("no key: 401 unauthorized on every operation whose auth needs one", async () => {
    for (const op of ops.filter((o) => ["agent", "owner", "either", "mcp"].includes(o.auth))) {
      observe(op, await call(op), 401, "unauthorized");
    }
  });

  it("a key of the wrong role: 403 forbidden (agent keys on owner-only routes, owner keys on /pay, the registration token)", async () => {
    const wrong: Record<string, (keyof typeof keys)[]> = {
      owner: ["agent", "registrar"],
      agent: ["owner", "registrar"],
      either: ["registrar"],
    };
    let checked = 0;
    for (const op of ops) {
      for (const role of wrong[op.auth] ?? []) {
        observe(op, await call(op, { key: keys[role], body: sampleBody(op, s, agent.agentAddress) }), 403, "forbidden");
        checked++;
      }
    }
    // genesis (registrar mode): an agent key may not create agents; MCP: the registration token may not call tools.
    for (const op of ops.filter((o) => o.auth === "registrar")) observe(op, await call(op, { key: keys.agent }), 403, "forbidden");
    for (const op of ops.filter((o) => o.auth === "mcp")) observe(op, await call(op, { key: keys.registrar }), 403, "forbidden");
    expect(checked).to.be.greaterThan(15);
  });

  /** A key the operation's auth mode lets through. */
  const allowedKey = (op: AnyOperation) =>
    op.auth === "owner" ? keys.owner : ["agent", "either", "mcp"].includes(op.auth) ? keys.agent : undefined;

  it("an invalid body: 400 bad_request with each problem in details, on every operation that reads one", async () => {
    const withBody = ops.filter((op) => inputPart(op, "body"));
    expect(withBody.length).to.be.greaterThan(12);
    for (const op of withBody) {
      const body = { notAField: 1 };
      expect(inputPart(op, "body")!.safeParse(body).success, `${op.method} ${op.path} accepts ${JSON.stringify(body)}`).to.equal(false);
      const res = await call(op, { key: allowedKey(op), body });
      observe(op, res, 400, "bad_request");
      expect(res.body.details, op.path).to.be.an("array").that.is.not.empty;
      expect(res.body.message).to.match(/^Invalid request body: /);
    }
  });

  it("an invalid query: 400 bad_request on every operation whose query schema refuses it", async () => {
    let checked = 0;
    for (const op of ops) {
      const query = inputPart(op, "query");
      if (!query || query.safeParse({ notAField: "1" }).success) continue;
      observe(op, await call(op, { key: allowedKey(op), query: "?notAField=1" }), 400, "bad_request");
      checked++;
    }
    expect(checked).to.be.greaterThan(5);
  });

  it("a malformed path parameter: 404 not_found (like a missing resource) on every operation whose schema refuses it", async () => {
    let checked = 0;
    for (const op of ops) {
      const params = inputPart(op, "params") as z.ZodObject | undefined;
      if (!params) continue;
      const bad = Object.fromEntries(Object.keys(params.shape).map((k) => [k, "not-an-id"]));
      const path = op.path.replace(/:(\w+)/g, (_, k: string) => bad[k]);
      if (params.safeParse(bad).success) continue;
      observe(op, await call(op, { key: allowedKey(op), path, body: sampleBody(op, s, agent.agentAddress) }), 404, "not_found");
      checked++;
    }
    expect(checked).to.be.greaterThan(8);
  });

  it("drives every other documented error status", async function () {
    this.timeout(120_000);
    const ctx = { s, owner, agent, keys, ops, observe, call, sampleBody: (op: AnyOperation) => sampleBody(op, s, agent.agentAddress) };
    for (const drive of drivers) await drive(ctx);
  });

  it("leaves no documented error status undriven (rate_limited, unavailable and internal, which every route has, aside)", () => {
    const missing: string[] = [];
    for (const op of ops) {
      for (const status of errorsByStatus(op).keys()) {
        const key = `${op.method} ${op.path} ${status}`;
        if (
          status === 429 &&
          errorsByStatus(op)
            .get(429)!
            .every((c) => c === "rate_limited")
        )
          continue;
        // A store or chain outage: test/e2e/dependencies.test.ts.
        if (
          status === 503 &&
          errorsByStatus(op)
            .get(503)!
            .every((c) => c === "unavailable")
        )
          continue;
        if (status === 500) continue;
        if (!seen.has(key) && !(key in NOT_DRIVEN)) missing.push(key);
      }
    }
    expect(missing, "drive these in test/http/operations.drive.ts").to.deep.equal([]);
    // An entry for a status an operation no longer documents, or now drives, is stale.
    for (const key of Object.keys(NOT_DRIVEN)) {
      const [method, path, status] = key.split(" ");
      const op = ops.find((o) => o.method === method && o.path === path);
      expect(op && errorsByStatus(op).has(Number(status)), `stale NOT_DRIVEN entry ${key}`).to.equal(true);
      expect(seen.has(key), `${key} is driven now: remove it from NOT_DRIVEN`).to.equal(false);
    }
  });
});
