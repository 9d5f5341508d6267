/**
 * The README's configuration table is generated from the config schema and src/configDocs.ts, and its network table
 * from src/chain/networks.ts (npm run docs:config).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { ENV_KEYS } from "../../src/config";
import { CONFIG_DOCS } from "../../src/configDocs";
import { withConfigTable } from "../../scripts/docs-config";

describe("README configuration table", () => {
  it("is what npm run docs:config generates from the schema (run it after changing src/config.ts or src/configDocs.ts)", () => {
    const readme = readFileSync(join(__dirname, "../../README.md"), "utf8");
    expect(readme === withConfigTable(readme), "README.md's configuration or network table is stale: run npm run docs:config").to.equal(
      true,
    );
  });

  it("documents exactly the schema's variables, each with a default and a meaning", () => {
    expect(Object.keys(CONFIG_DOCS).sort()).to.deep.equal([...ENV_KEYS].sort());
    for (const key of ENV_KEYS) {
      expect(CONFIG_DOCS[key].default, key).to.not.equal("");
      expect(CONFIG_DOCS[key].meaning, key).to.not.equal("");
    }
  });
});
