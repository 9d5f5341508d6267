import { expect } from "chai";
import { ledgerEntry } from "../../src/payments/phases";

describe("ledger entries", () => {
  it("a new entry has nothing on-chain yet, and keeps only the optional fields it is given", () => {
    const base = {
      agentAddress: "0xA",
      ownerAddress: null,
      policyAddress: "0xA",
      merchant: "api.example.com",
      serviceUrl: "https://api.example.com/x",
      currency: "USDC" as const,
      intent: "test",
      approvalId: null,
    };
    const at = new Date(0);
    const e = ledgerEntry("txn_1", { ...base, idempotencyScope: undefined }, { amount: "5", status: "pending", phase: "quoted" }, at);
    expect(e).to.deep.equal({
      txnId: "txn_1",
      ...base,
      amount: "5",
      status: "pending",
      phase: "quoted",
      reason: null,
      paymentId: null,
      txHash: null,
      authorizeTxHash: null,
      releaseTxHash: null,
      payTo: null,
      validBefore: null,
      createdAt: at,
      updatedAt: at,
      settledAt: null,
      onchain: { confirmed: false, blockNumber: null },
    });
    expect(ledgerEntry("txn_2", { ...base, idempotencyScope: "s" }, { amount: "1", status: "blocked", phase: "done" })).to.include({
      idempotencyScope: "s",
    });
  });
});
