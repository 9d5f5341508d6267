/**
 * docs/configuration.md's configuration table is generated from the config schema and src/configDocs.ts, and its network table
 * from src/chain/networks.ts (npm run docs:config).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { ENV_KEYS } from "../../src/config";
import { CONFIG_DOCS } from "../../src/configDocs";
import { CONFIG_DOC, withConfigTable } from "../../scripts/docs-config";

describe("the configuration table (docs/configuration.md)", () => {
  it("is what npm run docs:config generates from the schema (run it after changing src/config.ts or src/configDocs.ts)", () => {
    const text = readFileSync(join(__dirname, "../..", CONFIG_DOC), "utf8");
    expect(text === withConfigTable(text), `${CONFIG_DOC}'s configuration or network table is stale: run npm run docs:config`).to.equal(
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
