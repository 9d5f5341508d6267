import { expect } from "chai";
import { boundedJson, jsonDepth } from "../../src/util/bounded";

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

describe("boundedJson (what may be answered and stored of a seller's body)", () => {
  it("measures depth without recursion, even 200,000 levels deep", () => {
    const deep = JSON.parse("[".repeat(200_000) + "]".repeat(200_000));
    expect(jsonDepth(deep, 40)).to.equal(41);
    expect(jsonDepth(nested(3))).to.equal(3);
    expect(jsonDepth("x")).to.equal(0);
  });

  it("keeps a shallow value with storable keys as it is", () => {
    const v = { ok: [1, { b: "c" }], n: null };
    expect(boundedJson(v)).to.equal(v);
  });

  it("turns a value deeper than the bound into its JSON text (or the raw text it came from)", () => {
    expect(boundedJson(nested(40)))
      .to.be.a("string")
      .and.match(/^\{"a":\{"a":/);
    const raw = "[".repeat(100_000) + "]".repeat(100_000);
    expect(boundedJson(JSON.parse(raw), { raw, maxChars: 50 })).to.equal("[".repeat(50));
  });

  it("turns a value with keys MongoDB cannot store ($, dots, NUL) into text", () => {
    for (const key of ["$where", "a.b", "x\u0000y"]) {
      const out = boundedJson({ fine: { [key]: 1 } });
      expect(out).to.be.a("string");
      expect(JSON.parse(out as string)).to.deep.equal({ fine: { [key]: 1 } });
    }
  });

  it("cuts long strings to the bound", () => {
    expect(boundedJson("x".repeat(10), { maxChars: 4 })).to.equal("xxxx");
  });
});
