/** The auditor's view of a stack's chain (events only) held against its ledger: what every scheme test ends with. */
import { expect } from "chai";
import { auditFromLogs } from "../../src/indexer/audit";
import { fetchLedger, ledgerDisagreements } from "../../src/indexer/ledgerAudit";
import type { Stack } from "../helpers/stack";

/** Asserts the chain's events explain every outflow, and the ledger `key` reads agrees with them. */
export async function expectAuditClean(s: Stack, key: string): Promise<void> {
  const report = await auditFromLogs(s.svc.chain.provider, {
    factory: s.svc.config.factoryAddress,
    usdc: s.svc.config.usdcAddress,
    fromBlock: s.svc.config.factoryDeployBlock,
  });
  expect(report.inconsistencies, "the audit's anomalies").to.deep.equal([]);
  expect(ledgerDisagreements(report, await fetchLedger(s.url, key)), "the ledger against the chain").to.deep.equal([]);
}
