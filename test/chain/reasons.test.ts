import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { BlockReason, Decision, REASON_TABLE, decisionOf, reasonName } from "../../src/chain/reasons";

/** The members of a Solidity enum, in declaration order (their codes). */
function solidityEnum(name: string): string[] {
  const source = readFileSync(join(__dirname, "../../contracts/ISpendPolicy.sol"), "utf8");
  const body = new RegExp(`enum ${name} \\{([^}]*)\\}`).exec(source);
  if (!body) throw new Error(`enum ${name} not found in ISpendPolicy.sol`);
  return body[1]
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean);
}

describe("reason table and contract enums: one source, as the contract declares them", () => {
  it("BlockReason and Decision name the contract's enum members with their codes", () => {
    expect(Object.entries(BlockReason)).to.deep.equal(solidityEnum("BlockReason").map((m, i) => [m, i]));
    expect(Object.entries(Decision)).to.deep.equal(solidityEnum("Decision").map((m, i) => [m, i]));
  });

  it("the table has one row per on-chain reason (every BlockReason but None) and unique names", () => {
    const codes = REASON_TABLE.flatMap((r) => (r.code === null ? [] : [r.code]));
    expect(codes).to.deep.equal(Object.values(BlockReason).filter((c) => c !== BlockReason.None));
    expect(new Set(REASON_TABLE.map((r) => r.name)).size).to.equal(REASON_TABLE.length);
    for (const r of REASON_TABLE) expect(r.name, r.name).to.match(/^[a-z]+(_[a-z]+)*$/);
  });

  it("decodes codes from the chain: a name per known reason, reason_<code> otherwise, and an unknown decision is an error", () => {
    expect(reasonName(3n)).to.equal("daily_budget_exceeded");
    expect(reasonName(99)).to.equal("reason_99");
    expect(decisionOf(2n)).to.equal(Decision.Block);
    expect(() => decisionOf(3n)).to.throw(/Decision 3/);
  });
});
