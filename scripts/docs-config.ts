/**
 * npm run docs:config: writes the README's configuration table from the config schema (src/config.ts, its keys and
 * order) and what each key means (src/configDocs.ts), and its network table from the code's (src/chain/networks.ts).
 * test/docs/configTable.test.ts fails while they differ.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ENV_KEYS } from "../src/config";
import { configTable, networkTable } from "../src/configDocs";
import { PROJECT_ROOT } from "../src/paths";

export const TABLE_START =
  "<!-- config table: generated from src/config.ts and src/configDocs.ts by `npm run docs:config`; a test checks it -->";
export const TABLE_END = "<!-- end of config table -->";
export const NETWORKS_START = "<!-- network table: generated from src/chain/networks.ts by `npm run docs:config`; a test checks it -->";
export const NETWORKS_END = "<!-- end of network table -->";

/** `text` with what lies between the markers `from` and `to` replaced by `table`. */
function between(text: string, from: string, to: string, table: string): string {
  const start = text.indexOf(from);
  const end = text.indexOf(to);
  if (start < 0 || end < start) throw new Error(`README.md has no markers ${from}`);
  return text.slice(0, start + from.length) + "\n" + table + "\n" + text.slice(end);
}

/** The README with its configuration and network tables generated afresh. */
export function withConfigTable(readme: string): string {
  return between(between(readme, TABLE_START, TABLE_END, configTable(ENV_KEYS)), NETWORKS_START, NETWORKS_END, networkTable());
}

if (require.main === module) {
  const file = join(PROJECT_ROOT, "README.md");
  const before = readFileSync(file, "utf8");
  const after = withConfigTable(before);
  writeFileSync(file, after);
  console.log(before === after ? "README.md: the generated tables unchanged" : "README.md: the generated tables written");
}
