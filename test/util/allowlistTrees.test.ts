import { expect } from "chai";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { allowlistRoot, proveMerchant, type EntryCaps, type LeafForm } from "../../src/policy/allowlist";

/** The tree built afresh, as the contract's root and proofs are defined. */
function fresh(entries: string[], caps: EntryCaps, form: LeafForm): StandardMerkleTree<string[]> {
  return form === "v1"
    ? StandardMerkleTree.of(
        entries.map((e) => [e]),
        ["string"],
      )
    : StandardMerkleTree.of(
        entries.map((e) => [e, (caps[e] ?? 0n).toString()]),
        ["string", "uint256"],
      );
}

describe("allowlist trees kept between payments: the roots and proofs of a tree built afresh", function () {
  it("answers every list, cap and leaf form with its own tree, asked again and again in any order", function () {
    const lists: [string[], EntryCaps][] = [
      [["api.example.com"], {}],
      [["api.example.com"], { "api.example.com": 5n }],
      [["api.example.com", "*.data.io"], { "api.example.com": 5n }],
      [["*.data.io", "api.example.com"], { "api.example.com": 6n }],
      [Array.from({ length: 40 }, (_, i) => `m${i}.example.com`), { "m7.example.com": 1_000_000n }],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [entries, caps] of lists) {
        for (const form of ["v2", "v1"] as LeafForm[]) {
          const t = fresh(entries, caps, form);
          expect(allowlistRoot(entries, caps, form)).to.equal(t.root);
          for (const merchant of [entries[0], entries[entries.length - 1], "sub.data.io"]) {
            const proof = proveMerchant(entries, merchant, caps, form);
            if (!entries.some((e) => e === merchant || (e.startsWith("*.") && merchant.endsWith(e.slice(1))))) {
              expect(proof).to.equal(null);
              continue;
            }
            if (!proof) throw new Error(`no proof for ${merchant}`);
            const value = form === "v1" ? [proof.leaf] : [proof.leaf, proof.cap.toString()];
            expect(proof.cap).to.equal(form === "v1" ? 0n : (caps[proof.leaf] ?? 0n));
            expect(proof.proof).to.deep.equal(t.getProof(value));
            expect(StandardMerkleTree.verify(t.root, form === "v1" ? ["string"] : ["string", "uint256"], value, proof.proof)).to.equal(
              true,
            );
          }
        }
      }
    }
  });
});
