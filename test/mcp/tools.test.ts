/**
 * The MCP tools' behaviour through the SDK Client over HTTP, on the real chain with a real x402 seller. Access and
 * transport are in tools.access.test.ts.
 */
import { expect } from "chai";
import type { Stack } from "../helpers/stack";
import { policyEvents } from "../helpers/payments";
import { usdcBalance, type TestSeller } from "../helpers/sellers";
import { AGENT_TOOLS, agentHeaders, callTool, errorOf, textOf } from "./client";
import { USDC, useToolsStack } from "./toolsFixture";

describe("MCP tool server at /mcp (SDK Client over HTTP, real chain and x402 seller)", () => {
  const fx = useToolsStack();
  const { agent, connect } = fx;
  let s: Stack;
  let seller: TestSeller;
  before(() => {
    ({ s, seller } = fx);
  });

  it("lists exactly the six agent tools, each with input and output schemas; none approves, denies or sets limits", async () => {
    const c = await connect(agentHeaders(await agent()));
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name).sort()).to.deep.equal(AGENT_TOOLS);
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
    // The text below the lead line is the structured content itself: the documented fields, nothing more.
    expect(JSON.parse(textOf(r).split("\n").slice(1).join("\n"))).to.deep.equal(r.structuredContent);
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
    expect(errorOf(bad)).to.include({ error: "bad_request", status: 400 });
    expect(errorOf(bad).message).to.match(/^Invalid arguments for pay: /);
    const extra = await callTool(c, "list_transactions", { limit: 500, agentAddress: fresh.agentAddress });
    expect(errorOf(extra)).to.include({ error: "bad_request", status: 400 });
    expect(errorOf(extra).message).to.include("limit");
    const unknown = await callTool(c, "approve_payment", {});
    expect(unknown.isError).to.equal(true);
    expect(errorOf(unknown)).to.include({ error: "not_found", status: 404 });
    expect(errorOf(unknown).message).to.include("list_transactions");
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
