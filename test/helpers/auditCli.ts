/** `npm run audit` as an auditor runs it (scripts/audit.ts in a child process), and its output read back. */
import { spawn } from "node:child_process";
import { auditFromLogs, type AuditReport } from "../../src/audit/audit";
import type { Stack } from "./stack";

export interface AuditRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node --import tsx <args>` in a child process (with `env` in place of this process's environment when given). */
export function runScript(args: string[], env?: NodeJS.ProcessEnv): Promise<AuditRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", ...args], { stdio: ["ignore", "pipe", "pipe"], ...(env ? { env } : {}) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** scripts/audit.ts against the stack's chain (and, with `ledger`, its ledger as that key reads it). */
export function runAudit(s: Stack, ledger?: { key: string }): Promise<AuditRun> {
  const args = [
    "scripts/audit.ts",
    "--rpc",
    s.svc.config.rpcUrl,
    "--factory",
    s.svc.config.factoryAddress,
    "--from-block",
    String(s.svc.config.factoryDeployBlock),
  ];
  return runScript(ledger ? [...args, "--ledger", s.url, "--key", ledger.key] : args);
}

/** The JSON report (with `ledgerDisagreements` under --ledger) and the one-line summary that ends the output. */
export function auditOutput(stdout: string): { report: AuditReport & { ledgerDisagreements?: string[] }; summary: string } {
  const lines = stdout.trimEnd().split("\n");
  const summary = lines.pop() ?? "";
  return { report: JSON.parse(lines.join("\n")) as AuditReport & { ledgerDisagreements?: string[] }, summary };
}

/** What the audit needs to know of the stack's deployment: its factory, USDC and the factory's first block. */
export const auditOptions = (s: Stack) => ({
  factory: s.svc.config.factoryAddress,
  usdc: s.svc.config.usdcAddress,
  fromBlock: s.svc.config.factoryDeployBlock,
});

/** The audit of the stack's deployment read straight from its chain (`auditFromLogs`, as `npm run audit` does). */
export const auditStack = (s: Stack): Promise<AuditReport> => auditFromLogs(s.svc.chain.provider, auditOptions(s));
