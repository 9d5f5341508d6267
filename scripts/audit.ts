/**
 * The auditor's view of a SpendGate deployment from the chain's logs alone (no calldata, no database): every agent of
 * the factory, every payment decision, policy version, pause, owner, operator, withdrawal and day's spend, as JSON.
 *
 *   npm run audit -- --rpc https://mainnet.base.org --factory 0x... [--usdc 0x...] [--from-block N] [--to-block N]
 *     [--ledger https://spendgate.example --key <owner or agent API key> [--agents 0x...,0x...]]
 *
 * Exit code 1 when the events contradict each other (a spentToday that does not add up, USDC moved under a nonce the
 * policy never authorised, a settlement after a release), or, with --ledger, when the service's ledger (every entry
 * the key may read) disagrees with them (`ledgerDisagreements`). --agents names agents the ledger must cover even if
 * it has no entry of theirs.
 */
import { JsonRpcProvider } from "ethers";
import { USDC_ADDRESSES } from "../src/chain/addresses";
import { auditFromLogs, type AuditReport } from "../src/indexer/audit";
import { fetchLedger, ledgerDisagreements } from "../src/indexer/ledgerAudit";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const rpc = arg("rpc") ?? process.env.RPC_URL;
  const factory = arg("factory") ?? process.env.FACTORY_ADDRESS;
  if (!rpc || !factory)
    throw new Error("usage: npm run audit -- --rpc URL --factory ADDRESS [--usdc ADDRESS] [--from-block N] [--to-block N]");
  const provider = new JsonRpcProvider(rpc);
  const chainId = Number((await provider.getNetwork()).chainId);
  const usdc = arg("usdc") ?? USDC_ADDRESSES[chainId];
  if (!usdc) throw new Error(`no USDC address known for chain id ${chainId}: pass --usdc`);
  const toBlock = arg("to-block");
  const ledgerUrl = arg("ledger");
  const key = arg("key") ?? process.env.SPENDGATE_API_KEY;
  if (ledgerUrl && !key) throw new Error("--ledger needs --key (an owner's or an agent's API key) or SPENDGATE_API_KEY");
  // The ledger first, then the chain up to a later head: every event an entry tells is then in the audit.
  const ledgerBlock = await provider.getBlockNumber();
  const entries = ledgerUrl && key ? await fetchLedger(ledgerUrl, key) : undefined;
  const report = await auditFromLogs(provider, {
    factory,
    usdc,
    fromBlock: Number(arg("from-block") ?? process.env.FACTORY_DEPLOY_BLOCK ?? 0),
    toBlock: toBlock === undefined ? undefined : Number(toBlock),
  });
  const ledger = entries && ledgerDisagreements(report, entries, (arg("agents") ?? "").split(",").filter(Boolean), ledgerBlock);
  console.log(JSON.stringify(ledger ? { ...report, ledgerDisagreements: ledger } : report, null, 2));
  // The verdict last, on stderr: stdout stays one JSON document (for jq), the terminal ends with the summary.
  console.error(summary(report, ledger));
  provider.destroy();
  if (report.inconsistencies.length || ledger?.length) process.exitCode = 1;
}

/** One line: what was rebuilt, and whether the events (and the ledger) agree. */
function summary(report: AuditReport, ledger: string[] | undefined): string {
  const agents = Object.values(report.agents);
  const byStatus = new Map<string, number>();
  for (const p of agents.flatMap((a) => a.payments)) byStatus.set(p.status, (byStatus.get(p.status) ?? 0) + 1);
  const payments = [...byStatus].map(([status, n]) => `${n} ${status}`).join(", ") || "none";
  const refusals = agents.reduce((n, a) => n + a.blocked.length, 0);
  const verdict = [
    report.inconsistencies.length ? `${report.inconsistencies.length} INCONSISTENCIES in the events` : "events consistent",
    ledger === undefined ? null : ledger.length ? `${ledger.length} LEDGER DISAGREEMENTS` : "ledger agrees",
  ]
    .filter(Boolean)
    .join("; ");
  return `audit: blocks ${report.fromBlock}-${report.toBlock}, ${agents.length} agents, payments: ${payments}; ${refusals} refusals; ${verdict}.`;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
