import { expect } from "chai";
import { randomBytes } from "node:crypto";
import type { Wallet } from "ethers";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { approvalDecision } from "../helpers/payments";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { startCollector, type CollectedSpan, type Collector } from "../helpers/otlpCollector";
import { agentHeaders, callTool, mcpClient } from "../mcp/client";

const USDC = 1_000_000n;
const SERVER = 2; // OTLP SPAN_KIND_SERVER
const A = { agent: "spendgate.agent_address", txn: "spendgate.txn_id", payment: "spendgate.payment_id", kind: "spendgate.payment_kind" };

describe("OpenTelemetry traces over OTLP/HTTP: one trace per payment, one span per step", () => {
  let collector: Collector;
  let s: Stack;
  let seller: TestSeller;
  let owner: Wallet;
  let ownerApiKey: string;

  before(async () => {
    collector = await startCollector();
    s = await startStack({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
    const facilitator = await fundedFacilitator(s);
    seller = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: USDC });
    owner = randomOwner();
    ownerApiKey = await ownerKey(s, owner);
  });
  after(async () => {
    await seller?.close();
    await s?.close();
    await collector?.close();
  });

  const agent = async (policy: Parameters<Stack["onboard"]>[1] = {}) => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    return a;
  };
  const pay = (a: { agentAddress: string; apiKey: string }, headers: Record<string, string> = {}) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      headers,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: "traced" },
    });

  /** The payment span of `txnId` (exactly one), after the exporter has sent what ended. */
  async function paymentSpan(txnId: string): Promise<CollectedSpan> {
    await s.svc.telemetry.flush();
    const found = collector.spans.filter((x) => x.name === "payment" && x.attributes[A.txn] === txnId);
    expect(found, `payment spans of ${txnId}`).to.have.length(1);
    return found[0];
  }
  const inTrace = (p: CollectedSpan) => collector.spans.filter((x) => x.traceId === p.traceId);
  const stepsOf = (p: CollectedSpan) =>
    inTrace(p)
      .filter((x) => x.parentSpanId === p.spanId)
      .map((x) => x.name)
      .sort();
  const steps = (...names: string[]) => names.map((n) => `payment.${n}`).sort();

  it("POST /pay approved: the request's span, its payment span, a span per step with the payment's ids", async () => {
    const a = await agent();
    const traceId = randomBytes(16).toString("hex");
    const callerSpan = randomBytes(8).toString("hex");
    const res = await pay(a, { traceparent: `00-${traceId}-${callerSpan}-01` });
    expect(res.body).to.include({ status: "approved" });
    const p = await paymentSpan(res.body.transactionId);
    expect(p.attributes).to.include({
      [A.agent]: a.agentAddress,
      [A.payment]: res.body.paymentId,
      [A.kind]: "pay",
      "spendgate.outcome": "approved",
    });
    expect(p.resource).to.include({ "service.name": "spendgate" });
    expect(p.resource["service.version"]).to.be.a("string");

    // The caller's traceparent is honoured: the request's span continues its trace.
    expect(p.traceId).to.equal(traceId);
    const http = inTrace(p).find((x) => x.spanId === p.parentSpanId)!;
    expect(http).to.include({ name: "POST /pay", kind: SERVER, parentSpanId: callerSpan });
    expect(http.attributes).to.include({ "http.request.method": "POST", "http.route": "/pay", "http.response.status_code": 200 });
    expect(inTrace(p).filter((x) => x.name === "payment")).to.have.length(1);

    expect(stepsOf(p)).to.deep.equal(steps("admit", "quote", "sign", "decide", "authorize", "send", "settle"));
    // Every step names the agent; the payment's ids exist from its signature on, and the steps from then on name them.
    const ids = { [A.txn]: res.body.transactionId, [A.payment]: res.body.paymentId };
    for (const step of inTrace(p).filter((x) => x.parentSpanId === p.spanId)) {
      expect(step.attributes, step.name).to.include({ [A.agent]: a.agentAddress });
      if (["payment.authorize", "payment.send", "payment.settle"].includes(step.name)) expect(step.attributes, step.name).to.include(ids);
    }
  });

  it("a blocked payment: admit, then the on-chain record of the refusal (authorize); outcome and reason on the span", async () => {
    const a = await agent({ allowlist: ["example.com"] });
    const res = await pay(a);
    expect(res.body).to.include({ status: "blocked", reason: "merchant_not_allowed" });
    const p = await paymentSpan(res.body.transactionId);
    expect(p.attributes).to.include({
      [A.agent]: a.agentAddress,
      "spendgate.outcome": "blocked",
      "spendgate.reason": "merchant_not_allowed",
    });
    expect(stepsOf(p)).to.deep.equal(steps("admit", "authorize"));
  });

  it("a pending payment, then its approval carried out: two traces, each with its own steps", async () => {
    const a = await agent({ approvalThreshold: "0.75" });
    const held = await pay(a);
    expect(held.body).to.include({ status: "pending" });
    const requested = await paymentSpan(held.body.transactionId);
    expect(requested.attributes).to.include({ "spendgate.outcome": "pending" });
    expect(stepsOf(requested)).to.deep.equal(steps("admit", "quote", "sign", "decide"));

    const item = (await s.api("GET", "/approvals", { key: ownerApiKey })).body.approvals.find(
      (x: { id: string }) => x.id === held.body.approvalId,
    );
    const approved = await s.api("POST", `/approvals/${item.id}/approve`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "approve"),
    });
    expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
    await s.svc.telemetry.flush();
    const carried = collector.spans.filter((x) => x.name === "payment" && x.attributes[A.txn] === held.body.transactionId);
    expect(carried).to.have.length(2);
    const p = carried.find((x) => x.attributes[A.kind] === "approval")!;
    expect(p.traceId).to.not.equal(requested.traceId);
    expect(p.attributes).to.include({ [A.agent]: a.agentAddress, "spendgate.outcome": "approved" });
    expect(p.attributes[A.payment]).to.match(/^0x[0-9a-f]{64}$/);
    const http = inTrace(p).find((x) => x.spanId === p.parentSpanId)!;
    expect(http).to.include({ name: "POST /approvals/:id/approve", kind: SERVER });
    expect(stepsOf(p)).to.deep.equal(steps("quote", "decide", "sign", "authorize", "send", "settle"));
  });

  it("MCP pay: a trace under POST /mcp with the same steps", async () => {
    const a = await agent();
    const client = await mcpClient(s.url, agentHeaders(a));
    const r = await callTool(client, "pay", { serviceUrl: seller.resource, maxAmount: "5", intent: "traced over MCP" });
    await client.close();
    expect(r.structuredContent).to.include({ status: "approved" });
    const p = await paymentSpan(r.structuredContent.transactionId);
    expect(inTrace(p).find((x) => x.spanId === p.parentSpanId)).to.include({ name: "POST /mcp", kind: SERVER });
    expect(stepsOf(p)).to.deep.equal(steps("admit", "quote", "sign", "decide", "authorize", "send", "settle"));
  });

  it("gives every payment a trace of its own", () => {
    const payments = collector.spans.filter((x) => x.name === "payment");
    expect(payments.length).to.equal(5);
    expect(new Set(payments.map((x) => x.traceId)).size).to.equal(payments.length);
    expect(collector.requests.every((r) => r.path === "/v1/traces" && r.contentType === "application/json")).to.equal(true);
  });

  it("without METRICS_TOKEN, /metrics answers loopback clients only, never a forwarded request", async () => {
    const local = await s.api("GET", "/metrics");
    expect(local.status).to.equal(200);
    expect(local.body).to.include("spendgate_payments_total");
    const forwarded = await s.api("GET", "/metrics", { headers: { "X-Forwarded-For": "203.0.113.7" } });
    expect(forwarded.status).to.equal(403);
    expect(forwarded.body).to.include({ error: "forbidden", status: 403 });
  });
});
