/**
 * The worked example of docs/owners.md, linked from the README ("#### Worked example: ...", its first ```js block), run as an owner would run it: as
 * an ES module in a folder of its own whose node_modules is the project's (ethers, @openzeppelin/merkle-tree), with its
 * environment variables. Whatever the README's example says now is what runs.
 */
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScript, type AuditRun } from "./auditCli";

const ROOT = join(__dirname, "..", "..");

/** The code of the worked example. */
export function readmeExample(): string {
  const doc = readFileSync(join(ROOT, "docs", "owners.md"), "utf8");
  const at = doc.indexOf("#### Worked example");
  if (at < 0) throw new Error("docs/owners.md has no worked example");
  const block = /```js\n([\s\S]*?)```/.exec(doc.slice(at));
  if (!block) throw new Error("docs/owners.md's worked example has no js block");
  return block[1];
}

/** Runs the worked example with `env` (BASE, OWNER_API_KEY, OWNER_PRIVATE_KEY, AGENT, SELLER_URL...). */
export async function runReadmeExample(env: Record<string, string>): Promise<AuditRun> {
  const dir = mkdtempSync(join(tmpdir(), "spendgate-readme-"));
  try {
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
    const file = join(dir, "example.mjs");
    writeFileSync(file, readmeExample());
    return await runScript([file], { ...env, PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
