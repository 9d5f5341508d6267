/**
 * The dashboard's ledger CSV (built in the page): every entry's amount says what it is, a price or the agent's
 * ceiling when a refusal came before any price was known, and a cell a spreadsheet would run as a formula is defused.
 */
import { expect } from "chai";
import { ledgerCsv } from "../../src/dashboard/client/csv";
import type { LedgerItem } from "../../src/dashboard/client/types";

const entry = (over: Partial<LedgerItem>): LedgerItem => ({
  id: "t1",
  agentAddress: "0x0000000000000000000000000000000000000001",
  network: "base",
  chainId: 8453,
  merchant: "seller.example",
  amount: "0.01",
  currency: "USDC",
  intent: "buy a report",
  status: "approved",
  txHash: null,
  createdAt: "2026-12-06T00:00:00.000Z",
  reason: null,
  approvalId: null,
  paymentId: null,
  serviceUrl: "https://seller.example/r",
  settledAt: null,
  explorerUrl: null,
  onchain: { confirmed: false, blockNumber: null },
  ...over,
});

describe("the ledger CSV", () => {
  it("says after each amount whether it is a price or the agent's ceiling, and defuses formulas", () => {
    const [header, paid, refused, ...rest] = ledgerCsv([
      entry({}),
      entry({ id: "t2", status: "blocked", amount: "5", amountIs: "maxAmount", intent: "=HYPERLINK(1)" }),
    ]).split("\r\n");
    const columns = header.split(",");
    const at = columns.indexOf("amountIs");
    expect(at, "an amountIs column right after amount").to.equal(columns.indexOf("amount") + 1);
    expect(paid.split(",")[at]).to.equal("price");
    expect(refused.split(",")[at]).to.equal("maxAmount");
    expect(refused).to.include("'=HYPERLINK(1)");
    expect(rest).to.deep.equal([""]);
  });
});
