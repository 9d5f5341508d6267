/**
 * GET /ledger and MCP list_transactions answer a page and the total: the total is counted only when the page cannot
 * tell it (a full page, or an empty page past the end), and is the same as a count in every case.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import type { PaymentDoc } from "../../src/store/documents";
import { ledgerEntry } from "../../src/store/ledger";
import { startStack, type Stack } from "../helpers/stack";
import { agentHeaders, callTool, mcpClient } from "../mcp/client";

describe("ledger totals (counted only when the page cannot tell them)", () => {
  let s: Stack;
  let agent: { agentAddress: string; apiKey: string };
  let counts = 0;
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
    // Counts the store's count calls (the real collection answers them).
    const payments = s.svc.store.payments;
    const count = payments.countDocuments.bind(payments);
    payments.countDocuments = (...args: Parameters<typeof count>) => {
      counts++;
      return count(...args);
    };
  });
  after(() => s?.close());

  const blocked = Array.from({ length: ENTRIES }, (_, i) => i).filter((i) => i % 3 === 0).length;

  it("answers the total a count gives for every page: short, full, exactly at the end, past the end, filtered", async () => {
    const cases: [string, number, number, boolean][] = [
      // query, entries on the page, total, whether it had to count
      ["limit=50", ENTRIES, ENTRIES, false],
      ["limit=10", 10, ENTRIES, true],
      ["limit=10&offset=20", 3, ENTRIES, false],
      ["limit=23", 23, ENTRIES, true],
      ["limit=10&offset=23", 0, ENTRIES, true],
      ["limit=10&offset=40", 0, ENTRIES, true],
      [`limit=10&status=blocked`, blocked, blocked, false],
      [`limit=3&status=blocked`, 3, blocked, true],
      ["limit=10&status=denied", 0, 0, false],
    ];
    for (const [query, onPage, total, counted] of cases) {
      const before = counts;
      const res = await s.api("GET", `/ledger?address=${agent.agentAddress}&${query}`, { key: agent.apiKey });
      expect(res.status, query).to.equal(200);
      expect(res.body.transactions, query).to.have.length(onPage);
      expect(res.body.total, query).to.equal(total);
      expect(counts - before, query).to.equal(counted ? 1 : 0);
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
