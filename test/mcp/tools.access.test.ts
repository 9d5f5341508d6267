/**
 * Who gets into the MCP tool server and what they may do: keys and agent addresses, an owner key, one agent's data
 * hidden from another; and the transport's own answers (405, JSON-RPC parse error). The tools' behaviour is in
 * tools.test.ts.
 */
import { expect } from "chai";
import type { Wallet } from "ethers";
import { randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { usdcBalance, type TestSeller } from "../helpers/sellers";
import { agentHeaders, callTool, errorOf, mcpClient, textOf } from "./client";
import { useToolsStack } from "./toolsFixture";

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

describe("MCP tool server at /mcp: keys, agents and transport", () => {
  const fx = useToolsStack();
  const { agent, connect } = fx;
  let s: Stack;
  let seller: TestSeller;
  let owner: Wallet;
  before(() => {
    ({ s, seller, owner } = fx);
  });
  const raw = (headers: Record<string, string>, body: unknown = INITIALIZE) =>
    s.api("POST", "/mcp", { body, headers: { Accept: "application/json, text/event-stream", ...headers } });

  it("refuses a missing or wrong key, an owner key without an address, a malformed address and another agent's address before MCP", async () => {
    const a = await agent();
    const b = await agent();
    const cases: [Record<string, string>, number, string][] = [
      [{ "X-Agent-Address": a.agentAddress }, 401, "unauthorized"],
      [{ Authorization: `Bearer sk_${"0".repeat(64)}`, "X-Agent-Address": a.agentAddress }, 401, "unauthorized"],
      [{ Authorization: "Basic abc", "X-Agent-Address": a.agentAddress }, 401, "unauthorized"],
      // An agent key needs no X-Agent-Address (amounts.test.ts); an owner key does.
      [{ Authorization: `Bearer ${await ownerKey(s, owner)}` }, 400, "bad_request"],
      [{ Authorization: `Bearer ${a.apiKey}`, "X-Agent-Address": "0x1234" }, 400, "bad_request"],
      [{ Authorization: `Bearer ${a.apiKey}`, "X-Agent-Address": b.agentAddress }, 403, "forbidden"],
    ];
    for (const [headers, status, error] of cases) {
      const res = await raw(headers);
      expect(res.status, JSON.stringify(headers)).to.equal(status);
      expect(res.body).to.include({ error, status });
      expect(res.body.message).to.be.a("string");
      expect(res.body).to.not.have.property("jsonrpc");
    }
    let refused: unknown;
    await mcpClient(s.url, agentHeaders({ apiKey: a.apiKey, agentAddress: b.agentAddress })).catch((err: unknown) => (refused = err));
    expect(String(refused)).to.include("403");
  });

  it("an owner key acts for its linked agents only", async () => {
    const a = await agent();
    const key = await ownerKey(s, owner);
    const c = await connect({ Authorization: `Bearer ${key}`, "X-Agent-Address": a.agentAddress });
    expect((await callTool(c, "get_limits")).structuredContent).to.include({ address: a.agentAddress, ownerAddress: owner.address });
    const stranger = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    const res = await raw({ Authorization: `Bearer ${key}`, "X-Agent-Address": stranger.agentAddress });
    expect(res.status).to.equal(403);
    expect(res.body).to.include({ error: "forbidden" });
  });

  it("an owner key reads through the tools but cannot pay: pay is an isError forbidden result and nothing moves", async () => {
    const a = await agent();
    const key = await ownerKey(s, owner);
    const c = await connect({ Authorization: `Bearer ${key}`, "X-Agent-Address": a.agentAddress });
    const before = { ...seller.hits, balance: await usdcBalance(s, a.agentAddress) };
    for (const args of [
      { serviceUrl: seller.resource, maxAmount: "2", intent: "an owner trying to pay" },
      { serviceUrl: seller.resource, maxAmount: "2", intent: "an owner trying to pay", idempotencyKey: "owner-1" },
    ]) {
      const r = await callTool(c, "pay", args);
      expect(r.isError, textOf(r)).to.equal(true);
      expect(r.structuredContent).to.equal(undefined);
      expect(errorOf(r)).to.include({ error: "forbidden", status: 403 });
      expect(errorOf(r).message).to.include("agent");
    }
    expect(seller.hits).to.deep.equal({ paid: before.paid, unpaid: before.unpaid });
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before.balance);
    expect((await callTool(c, "list_transactions")).structuredContent.total).to.equal(0);
    // Read tools still answer for the owner key.
    expect((await callTool(c, "get_limits")).structuredContent).to.include({ address: a.agentAddress });
    expect((await callTool(c, "get_balance")).structuredContent).to.include({ agentAddress: a.agentAddress, usdc: "50" });
    expect((await callTool(c, "verify_merchant", { serviceUrl: seller.resource })).structuredContent).to.include({
      allowed: true,
      expectedOutcome: "approved",
    });

    // The agent's own key still pays.
    const ca = await connect(agentHeaders(a));
    const paid = await callTool(ca, "pay", { serviceUrl: seller.resource, maxAmount: "2", intent: "the agent's own purchase" });
    expect(paid.structuredContent.status, textOf(paid)).to.equal("approved");
  });

  it("one agent cannot see another's data", async () => {
    const a = await agent();
    const b = await agent();
    const ca = await connect(agentHeaders(a));
    const cb = await connect(agentHeaders(b));
    const paid = await callTool(ca, "pay", { serviceUrl: seller.resource, maxAmount: "2", intent: "agent A's purchase" });
    expect(paid.structuredContent.status).to.equal("approved");
    const peek = await callTool(cb, "get_payment", { transactionId: paid.structuredContent.transactionId });
    expect(peek.isError).to.equal(true);
    expect(errorOf(peek)).to.include({ error: "not_found" });
    expect(textOf(peek)).to.not.include(a.agentAddress);
    const listB = await callTool(cb, "list_transactions");
    expect(listB.structuredContent.transactions.map((t: { agentAddress: string }) => t.agentAddress)).to.not.include(a.agentAddress);
    expect((await callTool(cb, "get_limits")).structuredContent.address).to.equal(b.agentAddress);
  });

  it("servers reused across requests answer each concurrent call for its own caller only", async () => {
    const a = await agent({ perTxLimit: "3" });
    const b = await agent({ perTxLimit: "4" });
    const key = await ownerKey(s, owner);
    const ca = await connect(agentHeaders(a));
    const paid = await callTool(ca, "pay", { serviceUrl: seller.resource, maxAmount: "2", intent: "agent A's purchase" });
    expect(paid.structuredContent.status).to.equal("approved");
    const callers = [
      { headers: agentHeaders(a), address: a.agentAddress, perTxLimit: "3", total: 1 },
      { headers: agentHeaders(b), address: b.agentAddress, perTxLimit: "4", total: 0 },
      {
        headers: { Authorization: `Bearer ${key}`, "X-Agent-Address": b.agentAddress },
        address: b.agentAddress,
        perTxLimit: "4",
        total: 0,
      },
    ];
    const call = (i: number) => {
      const c = callers[i % callers.length];
      const tool = i % 2 ? "get_limits" : "list_transactions";
      const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: {} } };
      return raw(c.headers, body).then((res) => ({ c, tool, res }));
    };
    // Initialize requests mixed in: their servers hold a client's capabilities.
    const answers = await Promise.all([...Array.from({ length: 36 }, (_, i) => call(i)), raw(agentHeaders(a)), raw(agentHeaders(b))]);
    for (const { c, tool, res } of answers.filter((x): x is Awaited<ReturnType<typeof call>> => "c" in x)) {
      expect(res.status).to.equal(200);
      const out = res.body.result.structuredContent;
      if (tool === "get_limits") expect(out).to.include({ address: c.address, perTxLimit: c.perTxLimit });
      else {
        expect(out.total).to.equal(c.total);
        for (const t of out.transactions) expect(t.agentAddress).to.equal(c.address);
      }
    }
  });

  it("GET and DELETE /mcp answer 405 in the error shape (stateless server); a bad JSON body is a JSON-RPC parse error", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await s.api(method, "/mcp");
      expect(res.status).to.equal(405);
      expect(res.body).to.include({ error: "method_not_allowed", status: 405 });
      expect(res.headers.get("allow")).to.equal("POST");
    }
    const a = await agent();
    const bad = await raw(agentHeaders(a), "{not json");
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.include({ code: -32700 });
  });

  it("answers a batch whole when it cancels one of its own requests, instead of holding the connection open", async () => {
    const a = await agent();
    const call = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "list_transactions", arguments: {} } };
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3, reason: "hold it" } };
    // The SDK never answers a cancelled request: without a bound this would wait until the server's request timeout.
    const res = await fetch(`${s.url}/mcp`, {
      method: "POST",
      headers: { ...agentHeaders(a), "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify([call, cancel]),
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).to.equal(200);
    type Answer = { id: number; result?: { structuredContent?: { total?: number } } };
    // What is left of the batch is one request: the SDK answers it as one response.
    const answers = ([] as Answer[]).concat((await res.json()) as Answer | Answer[]);
    expect(answers.map((x) => x.id)).to.deep.equal([3]);
    expect(answers[0].result?.structuredContent?.total).to.be.a("number");
    // A cancellation alone (it names nothing in flight) is a notification like any other.
    expect((await raw(agentHeaders(a), cancel)).status).to.equal(202);
  });

  it("kept every tool answer within its output schema and logged no tool failure", () => {
    const problems = s.logs.filter((l) => l.includes("does not match its schema") || l.includes("mcp tool failed"));
    expect(problems).to.deep.equal([]);
  });
});
