/**
 * The floor plan's rules, read from the source: the sandbox (src/dev/) is reached by production code only through its
 * one door (src/dev/index.ts), from the one place that starts it; the auditor's room (src/audit/) reads the chain's
 * logs only, and the running service never reaches it; the x402 schemes beyond exact (src/payments/schemes/) are the
 * payment room's own, imported from nowhere else.
 */
import { expect } from "chai";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(__dirname, "../..");
const SRC = join(ROOT, "src");
const DEV = join(SRC, "dev");
/** The one file that starts the sandbox, and the one module it imports it through. */
const SANDBOX_STARTER = "src/start/boot.ts";
const SANDBOX_DOOR = "src/dev/index.ts";
const AUDIT = join(SRC, "audit");
/** What the audit may read besides itself: the chain's bindings and types, the allowlist's leaves, amounts. */
const AUDIT_READS = ["src/chain/", "src/policy/", "src/amounts.ts"];
const ROOM = join(SRC, "payments");
const SCHEMES = join(ROOM, "schemes");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Every module a file names (import, export ... from, import(), require()), resolved to a project path when relative. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  return importedFiles
    .map((i) => i.fileName)
    .filter((name) => name.startsWith("."))
    .map((name) => {
      const base = resolve(dirname(file), name);
      for (const candidate of [`${base}.ts`, join(base, "index.ts"), base]) {
        try {
          if (statSync(candidate).isFile()) return candidate;
        } catch {
          // not this one
        }
      }
      return base;
    });
}

const rel = (path: string) => relative(ROOT, path);

describe("layers: what may import what", function () {
  it("imports the sandbox (src/dev/) from one file only, the one that starts it, and only through src/dev/index.ts", function () {
    const offenders: string[] = [];
    for (const file of sourceFiles(SRC)) {
      if (file.startsWith(DEV + "/")) continue;
      for (const target of importsOf(file)) {
        if (target !== DEV && !target.startsWith(DEV + "/")) continue;
        if (rel(file) !== SANDBOX_STARTER || rel(target) !== SANDBOX_DOOR) offenders.push(`${rel(file)} -> ${rel(target)}`);
      }
    }
    expect(offenders, "imports of src/dev/ outside its door").to.deep.equal([]);
    expect(importsOf(join(ROOT, SANDBOX_STARTER)).map(rel)).to.include(SANDBOX_DOOR);
  });

  it("keeps the audit (src/audit/) to the chain's logs: it imports no room of the service, and no room of the service imports it", function () {
    const offenders: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const inAudit = file.startsWith(AUDIT + "/");
      for (const target of importsOf(file)) {
        const toAudit = target.startsWith(AUDIT + "/");
        if (inAudit && !toAudit && !AUDIT_READS.some((allowed) => rel(target).startsWith(allowed)))
          offenders.push(`${rel(file)} -> ${rel(target)}`);
        if (!inAudit && toAudit) offenders.push(`${rel(file)} -> ${rel(target)}`);
      }
    }
    expect(offenders, "imports across the audit's walls").to.deep.equal([]);
    expect(sourceFiles(AUDIT).map(rel)).to.include("src/audit/audit.ts");
  });

  it("imports the schemes' folder (src/payments/schemes/) from the payment's room only", function () {
    const offenders: string[] = [];
    for (const file of sourceFiles(SRC)) {
      if (file.startsWith(ROOM + "/")) continue;
      for (const target of importsOf(file)) {
        if (target === SCHEMES || target.startsWith(SCHEMES + "/")) offenders.push(`${rel(file)} -> ${rel(target)}`);
      }
    }
    expect(offenders, "imports of src/payments/schemes/ from outside the payment's room").to.deep.equal([]);
    // The folder holds the schemes' flows and their x402 glue (ARCHITECTURE.md).
    expect(sourceFiles(SCHEMES).map(rel)).to.include.members(["src/payments/schemes/channel.ts", "src/payments/schemes/channelPayment.ts"]);
  });

  it("reads every kind of import the check looks for (static, type-only, re-export, require, dynamic import)", function () {
    const text = [
      'import { a } from "./dev/x";',
      'import type { B } from "./dev/y";',
      'export { c } from "./dev/z";',
      'const d = require("./dev/w");',
      'const e = import("./dev/v");',
    ].join("\n");
    const names = ts.preProcessFile(text, true, true).importedFiles.map((i) => i.fileName);
    expect(names).to.have.members(["./dev/x", "./dev/y", "./dev/z", "./dev/w", "./dev/v"]);
  });
});
