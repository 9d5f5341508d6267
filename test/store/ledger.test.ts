import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { expect } from "chai";
import { ledgerEntry } from "../../src/store/ledger";

const SRC = join(__dirname, "../../src");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

describe("ledger writer: the one owner of the payment document", () => {
  it("no module but src/store/ledger.ts writes to the payments collection", () => {
    const writes =
      /payments\s*\.\s*(insertOne|insertMany|updateOne|updateMany|findOneAndUpdate|findOneAndReplace|replaceOne|bulkWrite|deleteOne|deleteMany)\b/g;
    const offenders = sources(SRC)
      .filter((f) => relative(SRC, f) !== join("store", "ledger.ts"))
      .flatMap((f) => [...readFileSync(f, "utf8").matchAll(writes)].map((m) => `${relative(SRC, f)}: ${m[0]}`));
    expect(offenders).to.deep.equal([]);
  });

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
