/**
 * A payment's answer is one typed value (approved | pending | blocked, or an error) mapped to HTTP and to MCP at the
 * edge. Idempotency-Key records written before answers were typed (`{ status, body, headers }`) still replay as
 * they were answered, on REST and MCP alike: an upgrade must never make a retry pay again.
 */
import { expect } from "chai";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { PayBlocked, PayRequest } from "../../src/schemas/payments";
import { idempotencyCaller, idempotencyScope, requestHashOf } from "../../src/payments/idempotency";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { agentHeaders, callTool, errorOf, mcpClient } from "../mcp/client";

describe("payment answers: one blocked shape, and Idempotency-Key records from before typed answers", () => {
  const { s, keep } = stackPerFile();
  let agent: { agentAddress: string; apiKey: string };
  let mcp: Client;

  before(async () => {
    agent = await s.onboard(randomOwner(), { allowlist: ["api.example.com"] });
    mcp = await mcpClient(s.url, agentHeaders(agent));
    keep(mcp);
  });

  const payBody = (url: string) => ({ agentAddress: agent.agentAddress, serviceUrl: url, maxAmount: "1", intent: "answers" });

  /** Writes a key's record the way the service did before answers were typed. */
  async function legacyRecord(key: string, body: unknown, response: { status: number; body: unknown; headers?: Record<string, string> }) {
    const principal = { role: "agent" as const, agentAddress: agent.agentAddress, keyPrefix: agent.apiKey.slice(0, 9) };
    const now = new Date();
    await s.svc.store.idempotency.insertOne({
      scope: idempotencyScope(idempotencyCaller(principal), key),
      requestHash: requestHashOf(PayRequest.parse(body)),
      state: "done",
      response,
      createdAt: now,
      expiresAt: new Date(now.getTime() + 3_600_000),
    });
  }

  it("answers a blocked payment in the one blocked shape, with what to do next, on REST and MCP", async () => {
    const rest = await s.api("POST", "/pay", { key: agent.apiKey, body: payBody("http://127.0.0.1:1/not-allowed") });
    expect(rest.status).to.equal(422);
    const blocked = PayBlocked.strict().parse(rest.body);
    expect(blocked).to.include({ status: "blocked", reason: "merchant_not_allowed", onchainEvent: "PaymentBlocked" });
    expect(blocked.message).to.match(/Do not retry/);

    const tool = await callTool(mcp, "pay", { serviceUrl: "http://127.0.0.1:1/not-allowed", maxAmount: "1", intent: "answers" });
    expect(tool.isError).to.equal(true);
    expect(Object.keys(PayBlocked.strict().parse(tool.structuredContent)).sort()).to.deep.equal(Object.keys(blocked).sort());
  });

  it("replays a blocked answer stored as { status, body } with its status, body and Idempotent-Replayed", async () => {
    const body = payBody("https://api.example.com/old-blocked");
    const stored = {
      status: "blocked",
      reason: "daily_budget_exceeded",
      onchainEvent: "PaymentBlocked",
      txHash: "0x" + "ab".repeat(32),
      amount: "1",
      merchant: "api.example.com",
      intent: "answers",
      transactionId: "txn_" + "1".repeat(24),
    };
    await legacyRecord("legacy-blocked", body, { status: 422, body: stored });
    const res = await s.api("POST", "/pay", { key: agent.apiKey, body, headers: { "Idempotency-Key": "legacy-blocked" } });
    expect(res.status).to.equal(422);
    expect(res.body).to.deep.equal(stored);
    expect(res.headers.get("Idempotent-Replayed")).to.equal("true");

    const tool = await callTool(mcp, "pay", {
      serviceUrl: body.serviceUrl,
      maxAmount: "1",
      intent: "answers",
      idempotencyKey: "legacy-blocked",
    });
    expect(tool.isError).to.equal(true);
    expect(tool.structuredContent).to.deep.equal(stored);
    // Nothing new was written: the answer came from the record.
    expect(await s.svc.store.payments.countDocuments({ merchant: "api.example.com", intent: "answers" })).to.equal(0);
  });

  it("replays an error stored as { status, body, headers } with its status, body and headers", async () => {
    const body = payBody("https://api.example.com/old-error");
    const error = { error: "gas_allowance_exceeded", message: "The owner's gas allowance for today is spent.", status: 429 };
    await legacyRecord("legacy-error", body, { status: 429, body: error, headers: { "Retry-After": "120" } });
    const res = await s.api("POST", "/pay", { key: agent.apiKey, body, headers: { "Idempotency-Key": "legacy-error" } });
    expect(res.status).to.equal(429);
    expect(res.body).to.deep.equal(error);
    expect(res.headers.get("Retry-After")).to.equal("120");
    expect(res.headers.get("Idempotent-Replayed")).to.equal("true");

    const tool = await callTool(mcp, "pay", {
      serviceUrl: body.serviceUrl,
      maxAmount: "1",
      intent: "answers",
      idempotencyKey: "legacy-error",
    });
    expect(tool.isError).to.equal(true);
    expect(errorOf(tool)).to.deep.equal(error);
  });
});
