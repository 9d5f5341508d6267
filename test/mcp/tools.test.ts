import { expect } from "chai";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Wallet } from "ethers";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { policyEvents } from "../helpers/payments";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { agentHeaders, callTool, errorOf, mcpClient, textOf } from "./client";

const USDC = 1_000_000n;
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

describe("MCP tool server at /mcp (SDK Client over HTTP, real chain and x402 seller)", () => {
  let s: Stack;
  let seller: TestSeller;
  let owner: Wallet;
  const clients: Client[] = [];

  before(async () => {
    s = await startStack();
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 1n * USDC });
    owner = randomOwner();
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await seller?.close();
    await s?.close();
  });

  async function agent(policy: Parameters<Stack["onboard"]>[1] = {}) {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
    await mintUsdc(s, a.agentAddress, 50n * USDC);
    return a;
  }
  async function connect(headers: Record<string, string>) {
    const c = await mcpClient(s.url, headers);
    clients.push(c);
    return c;
  }
  const raw = (headers: Record<string, string>, body: unknown = INITIALIZE) =>
    s.api("POST", "/mcp", { body, headers: { Accept: "application/json, text/event-stream", ...headers } });

  it("lists exactly the six agent tools, each with input and output schemas; none approves, denies or sets limits", async () => {
    const c = await connect(agentHeaders(await agent()));
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name).sort()).to.deep.equal([
      "get_balance",
      "get_limits",
      "get_payment",
      "list_transactions",
      "pay",
      "verify_merchant",
    ]);
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).to.equal("object");
      expect(t.outputSchema?.type, t.name).to.equal("object");
      expect(t.description, t.name).to.be.a("string").and.not.empty;
      expect(t.name).to.not.match(/approve|deny|limit_set|set_|update|pause/);
    }
    const pay = tools.find((t) => t.name === "pay")!;
    expect(Object.keys(pay.inputSchema.properties!)).to.include.members(["serviceUrl", "maxAmount", "intent", "idempotencyKey"]);
    expect(pay.inputSchema.properties).to.not.have.property("agentAddress");
    expect(pay.inputSchema.required).to.include.members(["serviceUrl", "maxAmount", "intent"]);
    expect(c.getInstructions()).to.include("never retry a blocked payment");
  });

  it("get_limits and get_balance answer from chain, the same as GET /limits and GET /wallet/balance", async () => {
    const a = await agent({ perTxLimit: "3", dailyBudget: "12", approvalThreshold: "2.5", weeklyBudget: "40", maxPaymentsPerHour: 30 });
    const c = await connect(agentHeaders(a));
    const limits = await callTool(c, "get_limits");
    expect(limits.isError ?? false).to.equal(false);
    const rest = await s.api("GET", `/limits?address=${a.agentAddress}`, { key: a.apiKey });
    expect(limits.structuredContent).to.deep.equal(rest.body.agents[0]);
    expect(limits.structuredContent).to.include({
      address: a.agentAddress,
      perTxLimit: "3",
      dailyBudget: "12",
      approvalThreshold: "2.5",
      deployed: true,
      paused: false,
    });
    expect(JSON.parse(textOf(limits))).to.deep.equal(limits.structuredContent);
    const structured = limits.structuredContent as { windows: { window: string }[]; velocity: object };
    expect(structured.windows.find((w) => w.window === "weekly")).to.include({ budget: "40", spent: "0", remaining: "40" });
    expect(structured.velocity).to.include({ maxPaymentsPerHour: 30, paymentsThisHour: 0, remaining: 30 });

    const balance = await callTool(c, "get_balance");
    expect(balance.structuredContent).to.include({
      agentAddress: a.agentAddress,
      usdc: "50",
      currency: "USDC",
      dailyBudget: "12",
      remainingDailyBudget: "12",
      chainId: 8453,
    });
  });

  it("verify_merchant reads the seller's quote without paying, and says whether the merchant is new and allowed", async () => {
    const a = await agent();
    const c = await connect(agentHeaders(a));
    const before = { ...seller.hits, balance: await usdcBalance(s, a.agentAddress) };
    const v = await callTool(c, "verify_merchant", { serviceUrl: seller.resource });
    expect(v.isError ?? false, textOf(v)).to.equal(false);
    expect(v.structuredContent).to.deep.include({
      merchant: "127.0.0.1",
      allowed: true,
      allowlistEntry: "127.0.0.1",
      policyDeployed: true,
      newMerchant: true,
      approvedPayments: 0,
      expectedOutcome: "approved",
      quoteError: null,
    });
    expect(v.structuredContent.quote).to.deep.equal({
      price: "1",
      amount: "1000000",
      currency: "USDC",
      scheme: "exact",
      network: "eip155:8453",
      asset: s.svc.config.usdcAddress,
      payTo: seller.payTo,
      x402Version: 2,
    });
    expect(seller.hits).to.deep.include({ paid: before.paid, unpaid: before.unpaid + 1 });
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before.balance);

    const paid = await callTool(c, "pay", { serviceUrl: seller.resource, maxAmount: "2", intent: "first purchase from this seller" });
    expect(paid.structuredContent.status, textOf(paid)).to.equal("approved");
    const again = await callTool(c, "verify_merchant", { serviceUrl: seller.resource });
    expect(again.structuredContent).to.include({ newMerchant: false, approvedPayments: 1 });

    const other = await callTool(c, "verify_merchant", { serviceUrl: seller.resource.replace("127.0.0.1", "localhost") });
    expect(other.structuredContent).to.include({
      merchant: "localhost",
      allowed: false,
      allowlistEntry: null,
      expectedOutcome: "blocked",
      reason: "merchant_not_allowed",
    });
    expect(other.structuredContent.advice).to.include("not on your allowlist");
  });

  it("verify_merchant does not contact a seller the allowlist refuses, nor any seller of an agent without a policy", async () => {
    const a = await agent(); // allowlist: 127.0.0.1 only
    const c = await connect(agentHeaders(a));
    const before = { ...seller.hits };
    const refused = await callTool(c, "verify_merchant", { serviceUrl: seller.resource.replace("127.0.0.1", "localhost") });
    expect(refused.isError ?? false, textOf(refused)).to.equal(false);
    expect(refused.structuredContent).to.deep.include({
      merchant: "localhost",
      allowed: false,
      allowlistEntry: null,
      quote: null,
      expectedOutcome: "blocked",
      reason: "merchant_not_allowed",
    });
    expect(refused.structuredContent.quoteError.error).to.equal("merchant_not_allowed");
    expect(refused.structuredContent.quoteError.message).to.include("not contacted");
    expect(refused.structuredContent.advice).to.include("not on your allowlist");
    expect(seller.hits).to.deep.equal(before);

    const fresh = await s.genesis(); // no owner, no policy
    const cf = await connect(agentHeaders(fresh));
    const noPolicy = await callTool(cf, "verify_merchant", { serviceUrl: seller.resource });
    expect(noPolicy.structuredContent).to.deep.include({
      policyDeployed: false,
      allowed: false,
      quote: null,
      expectedOutcome: "blocked",
      reason: "no_policy",
    });
    expect(noPolicy.structuredContent.quoteError.error).to.equal("no_policy");
    expect(seller.hits).to.deep.equal(before);

    // The allowed URL is still quoted: one unpaid request.
    const allowed = await callTool(c, "verify_merchant", { serviceUrl: seller.resource });
    expect(allowed.structuredContent.quote.amount).to.equal("1000000");
    expect(seller.hits).to.deep.equal({ paid: before.paid, unpaid: before.unpaid + 1 });
  });

  it("pay: approved settles through x402 and shows in list_transactions and get_payment", async () => {
    const a = await agent();
    const c = await connect(agentHeaders(a));
    const sellerBefore = await usdcBalance(s, seller.payTo);
    const r = await callTool(c, "pay", { serviceUrl: seller.resource, maxAmount: "1.5", intent: "market data for the weekly report" });
    expect(r.isError ?? false, textOf(r)).to.equal(false);
    expect(r.structuredContent).to.include({
      status: "approved",
      amount: "1",
      currency: "USDC",
      merchant: "127.0.0.1",
      remainingDailyBudget: "19",
    });
    expect(r.structuredContent.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(r.structuredContent.response).to.deep.equal({ status: 200, body: { data: "paid content", payer: a.agentAddress } });
    expect(seller.settlements).to.include(r.structuredContent.txHash);
    expect(await usdcBalance(s, seller.payTo)).to.equal(sellerBefore + USDC);
    // The indexer confirms entries in the background: let it catch up so both reads see the same ledger.
    await s.svc.indexer.syncOnce();

    const list = await callTool(c, "list_transactions", { limit: 10 });
    expect(list.structuredContent).to.include({ total: 1, limit: 10, offset: 0 });
    expect(list.structuredContent.transactions[0]).to.include({
      id: r.structuredContent.transactionId,
      status: "approved",
      txHash: r.structuredContent.txHash,
      intent: "market data for the weekly report",
    });
    const rest = await s.api("GET", `/ledger?address=${a.agentAddress}&limit=10`, { key: a.apiKey });
    expect(list.structuredContent).to.deep.equal(rest.body);

    const one = await callTool(c, "get_payment", { transactionId: r.structuredContent.transactionId });
    const restOne = await s.api("GET", `/ledger/${r.structuredContent.transactionId}`, { key: a.apiKey });
    expect(one.structuredContent).to.deep.equal(restOne.body);
    expect((await callTool(c, "list_transactions", { status: "blocked" })).structuredContent.total).to.equal(0);
  });

  it("pay: above the approval threshold is pending with an approvalId, tells the agent to wait, and moves nothing", async () => {
    const a = await agent({ approvalThreshold: "0.75" });
    const c = await connect(agentHeaders(a));
    const before = await usdcBalance(s, a.agentAddress);
    const r = await callTool(c, "pay", { serviceUrl: seller.resource, maxAmount: "2", intent: "a bigger report" });
    expect(r.isError ?? false, textOf(r)).to.equal(false);
    expect(r.structuredContent).to.include({ status: "pending", amount: "1", merchant: "127.0.0.1", intent: "a bigger report" });
    expect(r.structuredContent.approvalId).to.match(/^apr_[0-9a-f]{24}$/);
    expect(textOf(r)).to.include(r.structuredContent.approvalId).and.include("Wait for your owner").and.include("do not retry");
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before);
    const entry = await callTool(c, "get_payment", { transactionId: r.structuredContent.transactionId });
    expect(entry.structuredContent).to.include({ status: "pending", approvalId: r.structuredContent.approvalId });
  });

  it("pay: a blocked payment is an isError result with reason and onchainEvent PaymentBlocked, recorded on-chain", async () => {
    const a = await agent({ perTxLimit: "0.5", approvalThreshold: "0.5" });
    const c = await connect(agentHeaders(a));
    const before = await usdcBalance(s, a.agentAddress);
    const r = await callTool(c, "pay", { serviceUrl: seller.resource, maxAmount: "2", intent: "over the per-payment limit" });
    expect(r.isError).to.equal(true);
    expect(r.structuredContent).to.include({
      status: "blocked",
      reason: "per_tx_limit_exceeded",
      onchainEvent: "PaymentBlocked",
      amount: "1",
      merchant: "127.0.0.1",
    });
    expect(textOf(r))
      .to.match(/^Blocked: per_tx_limit_exceeded/)
      .and.include("Do not retry");
    const events = await policyEvents(s, a.policyContract, r.structuredContent.txHash);
    expect(events.map((e) => e.name)).to.deep.equal(["PaymentBlocked"]);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before);
  });

  it("pay: the same idempotencyKey and input answers the first result instead of paying twice", async () => {
    const a = await agent();
    const c = await connect(agentHeaders(a));
    const args = { serviceUrl: seller.resource, maxAmount: "2", intent: "idempotent purchase", idempotencyKey: "order-42" };
    const first = await callTool(c, "pay", args);
    const second = await callTool(c, "pay", args);
    expect(second.structuredContent).to.deep.equal(first.structuredContent);
    expect((await callTool(c, "list_transactions")).structuredContent.total).to.equal(1);
    const reused = await callTool(c, "pay", { ...args, intent: "another purchase" });
    expect(reused.isError).to.equal(true);
    expect(errorOf(reused)).to.include({ error: "conflict", status: 409 });
  });

  it("service errors are isError results with the REST error code and message", async () => {
    const fresh = await s.genesis(); // no owner, no policy
    const c = await connect(agentHeaders(fresh));
    const r = await callTool(c, "pay", { serviceUrl: seller.resource, maxAmount: "2", intent: "before activation" });
    expect(r.isError).to.equal(true);
    expect(r.structuredContent).to.equal(undefined);
    expect(errorOf(r)).to.include({ error: "no_policy", status: 422 });
    const v = await callTool(c, "verify_merchant", { serviceUrl: seller.resource });
    expect(v.structuredContent).to.include({ policyDeployed: false, expectedOutcome: "blocked", reason: "no_policy" });
    const missing = await callTool(c, "get_payment", { transactionId: "txn_000000000000000000000000" });
    expect(missing.isError).to.equal(true);
    expect(errorOf(missing)).to.include({ error: "not_found", status: 404 });
    const bad = await callTool(c, "pay", { serviceUrl: "ftp://example.com/x", maxAmount: "-1", intent: "" });
    expect(bad.isError).to.equal(true);
    expect(textOf(bad)).to.include("serviceUrl").and.include("maxAmount");
  });

  it("refuses a missing or wrong key, a missing or malformed address and another agent's address before MCP", async () => {
    const a = await agent();
    const b = await agent();
    const cases: [Record<string, string>, number, string][] = [
      [{ "X-Agent-Address": a.agentAddress }, 401, "unauthorized"],
      [{ Authorization: `Bearer sk_${"0".repeat(64)}`, "X-Agent-Address": a.agentAddress }, 401, "unauthorized"],
      [{ Authorization: "Basic abc", "X-Agent-Address": a.agentAddress }, 401, "unauthorized"],
      [{ Authorization: `Bearer ${a.apiKey}` }, 400, "bad_request"],
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

  it("answers a tool call in a few milliseconds", async () => {
    const c = await connect(agentHeaders(await agent()));
    await callTool(c, "list_transactions");
    const n = 30;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await callTool(c, "list_transactions", { limit: 5 });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6 / n;
    const t1 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await callTool(c, "get_limits");
    const limitsMs = Number(process.hrtime.bigint() - t1) / 1e6 / n;
    console.log(`      list_transactions: ${ms.toFixed(1)} ms per call; get_limits (chain reads): ${limitsMs.toFixed(1)} ms per call`);
    expect(ms).to.be.below(100);
  });

  it("kept every tool answer within its output schema and logged no tool failure", () => {
    const problems = s.logs.filter((l) => l.includes("does not match its schema") || l.includes("mcp tool failed"));
    expect(problems).to.deep.equal([]);
  });
});
