/**
 * The ERC-7730 descriptor reads every USDC amount in one token, Base's USDC (metadata.constants.usdc), and binds no
 * chain (its domain is the name and version only). SpendGate runs on every network of its table (issue 37), with the
 * same domain name and version: on any other chain a wallet that applies this descriptor formats the owner's budgets
 * and caps with whatever sits at Base's USDC address there (nothing, or another token's decimals). Each network's
 * prompts need a descriptor that names its chain and its own USDC.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { NETWORKS } from "../../src/chain/networks";

interface Descriptor {
  context: { eip712: { domain?: Record<string, unknown> } };
  metadata: { constants?: Record<string, string> };
}

const dir = join(__dirname, "..", "..", "erc7730");
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Descriptor & { includes?: string });
// A file another one includes (the types and formats they share) is part of those, not a descriptor of its own.
const included = new Set(files.map((d) => d.includes).filter(Boolean));
const descriptors = readdirSync(dir)
  .filter((f) => f.endsWith(".json") && !included.has(f))
  .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Descriptor);

describe("ERC-7730 descriptors per network (review of issue 36)", function () {
  it("every network's prompts read USDC amounts in that network's USDC, and no descriptor applies to a chain it does not name", function () {
    const wrong: string[] = [];
    for (const n of Object.values(NETWORKS)) {
      const applies = descriptors.filter((d) => {
        const chainId = d.context.eip712.domain?.chainId;
        return chainId === undefined || Number(chainId) === n.chainId;
      });
      for (const d of applies) {
        const usdc = d.metadata.constants?.usdc;
        if (usdc?.toLowerCase() !== n.usdc.address.toLowerCase())
          wrong.push(`${n.name}: amounts read in ${usdc}, its USDC is ${n.usdc.address}`);
      }
      if (applies.length === 0) wrong.push(`${n.name}: no descriptor`);
    }
    expect(wrong).to.deep.equal([]);
  });
});
