/**
 * What LLM clients send: pay's maxAmount as a JSON number (read as the decimal it is written as, never rounded; more
 * than 6 decimals refused with a message that says so), and an agent key without X-Agent-Address (its one agent).
 * The SDK's own Client over HTTP.
 */
import { expect } from "chai";
import { ownerKey } from "../helpers/owner";
import { usdcBalance } from "../helpers/sellers";
import { callTool, errorOf, textOf } from "./client";
import { USDC, useToolsStack } from "./toolsFixture";

describe("MCP amounts as JSON numbers, and X-Agent-Address optional with an agent key", () => {
  const fx = useToolsStack();
  const { agent, connect } = fx;

  it("pays with maxAmount as a JSON number, the same as the decimal string", async () => {
    const a = await agent();
    const c = await connect({ Authorization: `Bearer ${a.apiKey}`, "X-Agent-Address": a.agentAddress });
    const before = await usdcBalance(fx.s, fx.seller.payTo);
    const r = await callTool(c, "pay", { serviceUrl: fx.seller.resource, maxAmount: 1.5, intent: "priced with a JSON number" });
    expect(r.isError, textOf(r)).to.not.equal(true);
    expect(r.structuredContent).to.include({ status: "approved", amount: "1" });
    expect(await usdcBalance(fx.s, fx.seller.payTo)).to.equal(before + 1n * USDC);
  });

  it("refuses a number with more than 6 decimals (0.1 + 0.2 too), a negative and a number below the price, never rounding", async () => {
    const a = await agent();
    const c = await connect({ Authorization: `Bearer ${a.apiKey}` });
    const pay = (maxAmount: unknown) => callTool(c, "pay", { serviceUrl: fx.seller.resource, maxAmount, intent: "bad amounts" });
    for (const [amount, words] of [
      [0.0000015, "0.0000015 has 7 decimals"],
      [0.1 + 0.2, "0.30000000000000004 has 17 decimals"],
      [1e-7, "0.0000001 has 7 decimals"],
      [-1, "must be greater than 0"],
      [0, "must be greater than 0"],
      [true, "maxAmount"],
    ] as const) {
      const r = await pay(amount);
      expect(r.isError, String(amount)).to.equal(true);
      const body = errorOf(r);
      expect(body).to.include({ error: "bad_request", status: 400 });
      expect(body.message, String(amount)).to.include("maxAmount").and.include(words);
    }
    // 0.999999 is not rounded up to the price of 1: the caller's ceiling holds.
    const below = await pay(0.999999);
    expect(below.structuredContent).to.include({ status: "blocked", reason: "max_amount_exceeded" });
    const ledger = await callTool(c, "list_transactions");
    expect(ledger.structuredContent.transactions.map((t: { status: string }) => t.status)).to.deep.equal(["blocked"]);
  });

  it("lists maxAmount as a string or a number in tools/list", async () => {
    const a = await agent();
    const c = await connect({ Authorization: `Bearer ${a.apiKey}` });
    const pay = (await c.listTools()).tools.find((t) => t.name === "pay")!;
    expect((pay.inputSchema.properties as Record<string, { type: unknown }>).maxAmount.type).to.deep.equal(["string", "number"]);
  });

  it("an agent key without X-Agent-Address acts for its own agent; an owner key must name one", async () => {
    const a = await agent();
    const c = await connect({ Authorization: `Bearer ${a.apiKey}` });
    expect((await callTool(c, "get_limits")).structuredContent).to.include({ address: a.agentAddress, deployed: true });
    const balance = await callTool(c, "get_balance");
    expect(balance.structuredContent).to.include({ agentAddress: a.agentAddress, usdc: "50" });

    const key = await ownerKey(fx.s, fx.owner);
    const res = await fx.s.api("POST", "/mcp", {
      headers: { Authorization: `Bearer ${key}`, Accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(res.status).to.equal(400);
    expect(res.body).to.include({ error: "bad_request", status: 400 });
    expect(res.body.message).to.include("X-Agent-Address");
  });
});
