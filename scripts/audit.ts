/**
 * The auditor's view of a SpendGate deployment from the chain's logs alone (no calldata, no database): every agent of
 * the factory, every payment decision, policy version, pause, owner, operator, withdrawal and day's spend, as JSON.
 *
 *   npm run audit -- --rpc https://mainnet.base.org --factory 0x... [--usdc 0x...] [--weth 0x...] [--from-block N]
 *     [--to-block N] [--swap-counterparties 0x...,0x...] [--x402-channel 0x...] [--deposit-collectors 0x...,0x...]
 *     [--ledger https://spendgate.example --key <owner or agent API key> [--agents 0x...,0x...]]
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
import { USDC_ADDRESSES, WETH_ADDRESS } from "../src/chain/addresses";
import { auditFromLogs } from "../src/audit/audit";
import { fetchLedger, ledgerDisagreements } from "../src/audit/ledgerAudit";

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
    weth: arg("weth") ?? WETH_ADDRESS,
    swapCounterparties: (arg("swap-counterparties") ?? "").split(",").filter(Boolean),
    x402: {
      batchSettlement: arg("x402-channel"),
      depositCollectors: arg("deposit-collectors")?.split(",").filter(Boolean),
    },
    fromBlock: Number(arg("from-block") ?? process.env.FACTORY_DEPLOY_BLOCK ?? 0),
    toBlock: toBlock === undefined ? undefined : Number(toBlock),
  });
  const ledger = entries && ledgerDisagreements(report, entries, (arg("agents") ?? "").split(",").filter(Boolean), ledgerBlock);
  console.log(JSON.stringify(ledger ? { ...report, ledgerDisagreements: ledger } : report, null, 2));
  const anomalies = report.inconsistencies.length + (ledger?.length ?? 0);
  console.log(
    `audit: ${Object.keys(report.agents).length} agents, ${report.events} events, ${anomalies} anomalies` +
      (ledger ? ` (${report.inconsistencies.length} on-chain, ${ledger.length} in the ledger)` : "") +
      (report.notes.length ? `, ${report.notes.length} notes` : ""),
  );
  provider.destroy();
  if (report.inconsistencies.length || ledger?.length) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
