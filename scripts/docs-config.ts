/**
 * npm run docs:config: writes the README's configuration table from the config schema (src/config.ts, its keys and
 * order) and what each key means (src/configDocs.ts). test/docs/configTable.test.ts fails while they differ.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ENV_KEYS } from "../src/config";
import { configTable } from "../src/configDocs";
import { PROJECT_ROOT } from "../src/paths";

export const TABLE_START =
  "<!-- config table: generated from src/config.ts and src/configDocs.ts by `npm run docs:config`; a test checks it -->";
export const TABLE_END = "<!-- end of config table -->";

/** The README with its configuration table generated afresh. */
export function withConfigTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error("README.md has no configuration table markers");
  return readme.slice(0, start + TABLE_START.length) + "\n" + configTable(ENV_KEYS) + "\n" + readme.slice(end);
}

if (require.main === module) {
  const file = join(PROJECT_ROOT, "README.md");
  const before = readFileSync(file, "utf8");
  const after = withConfigTable(before);
  writeFileSync(file, after);
  console.log(before === after ? "README.md: configuration table unchanged" : "README.md: configuration table written");
}
