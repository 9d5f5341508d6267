/**
 * GET /ledger and MCP list_transactions answer a page and the total: the count runs beside the page, and a page that
 * tells the total itself (a short one, not past the end) answers without waiting for it; the total is the same as a
 * count in every case.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import type { PaymentDoc } from "../../src/store/documents";
import { ledgerEntry } from "../../src/payments/phases";
import { startStack, type Stack } from "../helpers/stack";
import { agentHeaders, callTool, mcpClient } from "../mcp/client";

describe("ledger totals (a page and its total, the count beside the page)", () => {
  let s: Stack;
  let agent: { agentAddress: string; apiKey: string };
  const ENTRIES = 23;

  before(async () => {
    s = await startStack();
    agent = await s.genesis();
    const at = Date.now();
    const docs: PaymentDoc[] = Array.from({ length: ENTRIES }, (_, i) =>
      ledgerEntry(
        `txn_${randomBytes(12).toString("hex")}`,
        {
          agentAddress: agent.agentAddress,
          ownerAddress: null,
          policyAddress: agent.agentAddress,
          merchant: "ledger.example",
          serviceUrl: "https://ledger.example/r",
          currency: "USDC",
          intent: `entry ${i}`,
          approvalId: null,
        },
        { amount: "10000", status: i % 3 === 0 ? "blocked" : "approved", phase: "done", onchain: { confirmed: true, blockNumber: 1 } },
        new Date(at - i * 1000),
      ),
    );
    await s.svc.store.payments.insertMany(docs);
  });
  after(() => s?.close());

  const blocked = Array.from({ length: ENTRIES }, (_, i) => i).filter((i) => i % 3 === 0).length;

  it("answers the total a count gives for every page: short, full, exactly at the end, past the end, filtered", async () => {
    const cases: [string, number, number][] = [
      // query, entries on the page, total
      ["limit=50", ENTRIES, ENTRIES],
      ["limit=10", 10, ENTRIES],
      ["limit=10&offset=20", 3, ENTRIES],
      ["limit=23", 23, ENTRIES],
      ["limit=10&offset=23", 0, ENTRIES],
      ["limit=10&offset=40", 0, ENTRIES],
      [`limit=10&status=blocked`, blocked, blocked],
      [`limit=3&status=blocked`, 3, blocked],
      ["limit=10&status=denied", 0, 0],
    ];
    for (const [query, onPage, total] of cases) {
      const res = await s.api("GET", `/ledger?address=${agent.agentAddress}&${query}`, { key: agent.apiKey });
      expect(res.status, query).to.equal(200);
      expect(res.body.transactions, query).to.have.length(onPage);
      expect(res.body.total, query).to.equal(total);
    }
  });

  it("never answers a total short of the entries it shows (a count that ran before the page, and an entry since)", async () => {
    const payments = s.svc.store.payments;
    const count = payments.countDocuments.bind(payments);
    // The count raced ahead of the page: it missed the newest entries the page then shows.
    payments.countDocuments = async (...args: Parameters<typeof count>) => (await count(...args)) - 5;
    try {
      const res = await s.api("GET", `/ledger?address=${agent.agentAddress}&limit=${ENTRIES}`, { key: agent.apiKey });
      expect(res.body.transactions).to.have.length(ENTRIES);
      expect(res.body.total).to.equal(ENTRIES);
    } finally {
      payments.countDocuments = count;
    }
  });

  it("list_transactions answers the same page and total as GET /ledger", async () => {
    const client = await mcpClient(s.url, agentHeaders(agent));
    for (const args of [{ limit: 10 }, { limit: 10, offset: 20 }, { limit: 50 }, { limit: 10, offset: 30 }]) {
      const tool = await callTool(client, "list_transactions", args);
      const rest = await s.api("GET", `/ledger?address=${agent.agentAddress}&limit=${args.limit}&offset=${args.offset ?? 0}`, {
        key: agent.apiKey,
      });
      expect(tool.structuredContent, JSON.stringify(args)).to.deep.equal(rest.body);
    }
    await client.close();
  });
});
