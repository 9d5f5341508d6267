/**
 * The auditor's view of a SpendGate deployment from the chain's logs alone (no calldata, no database): every agent of
 * the factory, every payment decision, policy version, pause, owner, operator, withdrawal and day's spend, as JSON.
 *
 *   npm run audit -- --rpc https://mainnet.base.org --factory 0x... [--usdc 0x...] [--weth 0x...] [--from-block N]
 *     [--to-block N] [--swap-counterparties 0x...,0x...] [--x402-channel 0x...] [--deposit-collectors 0x...,0x...]
 *     [--ledger https://spendgate.example --key <owner or agent API key> [--agents 0x...,0x...]]
 *   npm run audit -- --network base-sepolia [...]     one network of the table (its USDC and WETH; its RPC and factory
 *                                                     below unless given)
 *   npm run audit [-- ...]                            with NETWORKS set: every one of them, each on its own chain
 *
 * Per network: the RPC is --rpc, else `<NAME>_RPC_URL`, else RPC_URL (the first network's); the factory --factory,
 * else FACTORY_ADDRESS (the first network's), else deployments/<name>.json (with its block as --from-block); USDC and
 * WETH the network table's unless --usdc and --weth say otherwise. The chain must answer the network's chain id. With
 * --ledger, each network is held against the ledger's entries of that network only.
 *
 * Exit code 1 when the events contradict each other (`inconsistencies`: a spentToday that does not add up, USDC moved
 * under a nonce the policy never authorised, a settlement after a release or in another epoch, an epoch, leaf, cap or
 * payee the events do not bear out, an owner action not signed by the owner in force, a USDC or WETH transfer out of a
 * wallet that no authorised settlement, withdrawal, swap, channel deposit or open upto ceiling explains, a credit of
 * more than came back), or, with --ledger, when the service's ledger
 * (every entry the key may read) disagrees with them (`ledgerDisagreements`). --agents names agents the ledger must
 * cover even if it has no entry of theirs. The JSON report is followed by a one-line summary (agents, events read,
 * anomalies). --x402-channel and --deposit-collectors name the x402 batch-settlement channel contract and its deposit
 * collectors where they are not at their canonical addresses.
 */
import { JsonRpcProvider } from "ethers";
import { join } from "node:path";
import { USDC_ADDRESSES, WETH_ADDRESSES } from "../src/chain/addresses";
import { NETWORKS, isNetworkName, rpcUrlKey, type NetworkName } from "../src/chain/networks";
import { factoryFromDeployments } from "../src/configNetworks";
import { PROJECT_ROOT } from "../src/paths";
import { auditFromLogs, type AuditReport } from "../src/audit/audit";
import { fetchLedger, ledgerDisagreements, receiptSummary, type LedgerTransaction } from "../src/audit/ledgerAudit";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** One chain to audit: where it is read, and what of it. */
interface Target {
  network?: NetworkName;
  rpc: string;
  factory: string;
  fromBlock: number;
}

/** The networks named (--network, else NETWORKS), each with its RPC and factory; one unnamed chain with --rpc alone. */
function targets(): Target[] {
  const one = arg("network");
  if (one !== undefined && !isNetworkName(one)) throw new Error(`--network ${one} is not a network of the table`);
  const names: (NetworkName | undefined)[] = one
    ? [one]
    : arg("rpc") || !process.env.NETWORKS
      ? [undefined]
      : process.env.NETWORKS.split(",").map((n) => {
          const name = n.trim();
          if (!isNetworkName(name)) throw new Error(`NETWORKS names ${name}, not a network of the table`);
          return name;
        });
  const firstOfService = process.env.NETWORKS?.split(",")[0]?.trim() ?? process.env.NETWORK ?? "base";
  return names.map((network) => {
    // The service's own variables serve its first network; deployments/<name>.json any.
    const first = network === undefined || network === firstOfService;
    const record = network ? factoryFromDeployments(join(PROJECT_ROOT, "deployments"), network) : {};
    const rpc = arg("rpc") ?? (network && process.env[rpcUrlKey(network)]) ?? (first ? process.env.RPC_URL : undefined);
    const factory = arg("factory") ?? (first ? process.env.FACTORY_ADDRESS : undefined) ?? record.address;
    const where = network ? ` for ${network}` : "";
    if (!rpc || !factory)
      throw new Error(`usage: npm run audit -- [--network NAME] --rpc URL --factory ADDRESS [...]: no RPC or factory${where}`);
    const fromBlock = Number(arg("from-block") ?? (first ? process.env.FACTORY_DEPLOY_BLOCK : undefined) ?? record.block ?? 0);
    return { network, rpc, factory, fromBlock };
  });
}

/** A chain opened for its audit: checked to be the network's, its USDC known, its head when the ledger was read. */
async function open(t: Target) {
  const provider = new JsonRpcProvider(t.rpc);
  const chainId = Number((await provider.getNetwork()).chainId);
  if (t.network && chainId !== NETWORKS[t.network].chainId) {
    provider.destroy();
    throw new Error(`the RPC of ${t.network} answers chain id ${chainId}, not ${NETWORKS[t.network].chainId}`);
  }
  const usdc = arg("usdc") ?? USDC_ADDRESSES[chainId];
  if (!usdc) {
    provider.destroy();
    throw new Error(`no USDC address known for chain id ${chainId}: pass --usdc`);
  }
  return { t, provider, chainId, usdc, head: await provider.getBlockNumber() };
}

/** One chain's audit, and with `ledger` where they disagree (the ledger's entries of this network only). */
async function auditOne(c: Awaited<ReturnType<typeof open>>, ledger: { entries: LedgerTransaction[]; first: string } | undefined) {
  const { t, provider, chainId, usdc } = c;
  const toBlock = arg("to-block");
  const report = await auditFromLogs(provider, {
    factory: t.factory,
    usdc,
    weth: arg("weth") ?? WETH_ADDRESSES[chainId],
    swapCounterparties: (arg("swap-counterparties") ?? "").split(",").filter(Boolean),
    x402: {
      batchSettlement: arg("x402-channel"),
      depositCollectors: arg("deposit-collectors")?.split(",").filter(Boolean),
    },
    fromBlock: t.fromBlock,
    toBlock: toBlock === undefined ? undefined : Number(toBlock),
  });
  // An entry without a network is from before networks were recorded: the service's first network's.
  const mine = ledger?.entries.filter((e) => !t.network || ((e as { network?: string }).network ?? ledger.first) === t.network);
  const disagreements = mine && ledgerDisagreements(report, mine, (arg("agents") ?? "").split(",").filter(Boolean), c.head);
  return { report, disagreements, receipts: mine && receiptSummary(mine) };
}

function summary(report: AuditReport, ledger: string[] | undefined, receipts?: ReturnType<typeof receiptSummary>): string {
  const anomalies = report.inconsistencies.length + (ledger?.length ?? 0);
  return (
    `${Object.keys(report.agents).length} agents, ${report.events} events, ${anomalies} anomalies` +
    (ledger ? ` (${report.inconsistencies.length} on-chain, ${ledger.length} in the ledger)` : "") +
    (report.notes.length ? `, ${report.notes.length} notes` : "") +
    // Receipts are the sellers' word (docs/receipts.md): told, never an anomaly; said only when a seller signed any.
    (receipts && receipts.verified + receipts.flagged.length > 0
      ? `; receipts: ${receipts.verified} verified, ${receipts.flagged.length} flagged, ${receipts.none} approved without one`
      : "")
  );
}

async function main(): Promise<void> {
  const ledgerUrl = arg("ledger");
  const key = arg("key") ?? process.env.SPENDGATE_API_KEY;
  if (ledgerUrl && !key) throw new Error("--ledger needs --key (an owner's or an agent's API key) or SPENDGATE_API_KEY");
  const chains = [];
  try {
    // Every chain's head first, then the ledger, then each chain up to a later head: every event an entry tells is
    // then in its audit.
    for (const t of targets()) chains.push(await open(t));
    const entries = ledgerUrl && key ? await fetchLedger(ledgerUrl, key) : undefined;
    const first = process.env.NETWORKS?.split(",")[0]?.trim() ?? process.env.NETWORK ?? "base";
    const results = [];
    for (const c of chains) results.push({ t: c.t, ...(await auditOne(c, entries && { entries, first })) });
    report(results);
  } finally {
    for (const c of chains) c.provider.destroy();
  }
}

function report(
  results: { t: Target; report: AuditReport; disagreements?: string[]; receipts?: ReturnType<typeof receiptSummary> }[],
): void {
  const shown = results.map((r) =>
    r.disagreements ? { ...r.report, ledgerDisagreements: r.disagreements, ledgerReceipts: r.receipts } : r.report,
  );
  // One chain: its report as ever; several: one report per network.
  const several = results.length > 1;
  console.log(JSON.stringify(several ? Object.fromEntries(results.map((r, i) => [r.t.network, shown[i]])) : shown[0], null, 2));
  console.log(
    `audit: ${results.map((r) => `${several ? `${r.t.network}: ` : ""}${summary(r.report, r.disagreements, r.receipts)}`).join("; ")}`,
  );
  if (results.some((r) => r.report.inconsistencies.length || r.disagreements?.length)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
