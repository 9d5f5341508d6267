/**
 * npm run docs:config: writes docs/configuration.md's configuration table from the config schema (src/config.ts, its keys and
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
  if (start < 0 || end < start) throw new Error(`${CONFIG_DOC} has no markers ${from}`);
  return text.slice(0, start + from.length) + "\n" + table + "\n" + text.slice(end);
}

/** The configuration reference (its tables between the markers), relative to the project's root. */
export const CONFIG_DOC = "docs/configuration.md";

/** The configuration reference with its configuration and network tables generated afresh. */
export function withConfigTable(text: string): string {
  return between(between(text, TABLE_START, TABLE_END, configTable(ENV_KEYS)), NETWORKS_START, NETWORKS_END, networkTable());
}

if (require.main === module) {
  const file = join(PROJECT_ROOT, CONFIG_DOC);
  const before = readFileSync(file, "utf8");
  const after = withConfigTable(before);
  writeFileSync(file, after);
  console.log(before === after ? `${CONFIG_DOC}: the generated tables unchanged` : `${CONFIG_DOC}: the generated tables written`);
}
