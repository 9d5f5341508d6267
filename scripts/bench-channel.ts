/**
 * npm run bench:channel (issue 26, Must show 1): SpendGate pays a batch-settlement seller built on the STOCK x402
 * packages (@x402/evm's batch-settlement server with its channel manager, and facilitator, over real HTTP on the
 * embedded chain) BENCH_CHANNEL_PAYMENTS (1,000) times through POST /pay on ONE deposit authorised on-chain under the
 * policy; the seller claims and settles (manager.claimAndSettle()); the owner closes the channel through
 * POST /agents/:address/channels/:channelId/close, which refunds the unused deposit to the wallet and credits it back
 * to the budget windows (spentToday drops by it). Prints the numbers and checks each; exits 1 on any mismatch.
 *
 * The deposit is BENCH_CHANNEL_DEPOSIT_REQUESTS (1,200) requests' worth (the service's CHANNEL_DEPOSIT_REQUESTS), more
 * than the payments, so there is an unused part to refund; with 1,000 the refund is 0 and the checks still hold.
 */
import { Wallet } from "ethers";
import { fromBaseUnits } from "../src/amounts";
import { randomOwner, startStack } from "../test/helpers/stack";
import { mintUsdc, usdcBalance } from "../test/helpers/sellers";
import { spentToday } from "../test/helpers/payments";
import { startBatchSeller, stockSchemeFacilitator } from "../test/helpers/schemeSellers";
import { stats } from "./bench/sampling";

const PAYMENTS = Number(process.env.BENCH_CHANNEL_PAYMENTS ?? 1000);
const DEPOSIT_REQUESTS = Number(process.env.BENCH_CHANNEL_DEPOSIT_REQUESTS ?? 1200);
const PRICE = 1_000n; // 0.001 USDC a request
const FUNDS = 10_000_000n; // the wallet's 10 USDC

const failures: string[] = [];
function check(what: string, actual: unknown, expected: unknown): void {
  const ok = String(actual) === String(expected);
  if (!ok) failures.push(what);
  console.log(`  ${ok ? "ok  " : "FAIL"} ${what}: ${String(actual)}${ok ? "" : ` (expected ${String(expected)})`}`);
}
const usd = (units: bigint) => `${fromBaseUnits(units)} USDC`;

async function main(): Promise<void> {
  const s = await startStack({ RATE_LIMIT_PER_MINUTE: "1000000", CHANNEL_DEPOSIT_REQUESTS: String(DEPOSIT_REQUESTS) });
  const key = Wallet.createRandom();
  await s.svc.chain.provider.send("hardhat_setBalance", [key.address, `0x${(10n ** 21n).toString(16)}`]);
  const facilitator = stockSchemeFacilitator(s.svc.config.rpcUrl, key.privateKey);
  const seller = await startBatchSeller({ facilitator: facilitator.client, usdc: s.svc.config.usdcAddress, price: PRICE });
  const agent = await s.onboard(randomOwner(), { perTxLimit: "5", dailyBudget: "100", approvalThreshold: "5", allowlist: ["127.0.0.1"] });
  await mintUsdc(s, agent.agentAddress, FUNDS);
  const deposit = PRICE * BigInt(DEPOSIT_REQUESTS);
  const charged = PRICE * BigInt(PAYMENTS);
  const refund = deposit - charged;

  const voucherMs: number[] = [];
  let depositMs = 0;
  let deposits = 0;
  let channelId = "";
  const started = performance.now();
  for (let i = 0; i < PAYMENTS; i++) {
    const t = performance.now();
    const res = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "0.01", intent: "bench:channel" },
    });
    const ms = performance.now() - t;
    if (res.status !== 200) throw new Error(`payment ${i + 1}: POST /pay answered ${res.status}: ${JSON.stringify(res.body)}`);
    const channel = res.body.channel as { channelId: string; depositTxHash: string | null; cumulative: string };
    if (channel.depositTxHash !== null) {
      deposits++;
      depositMs = ms;
    } else voucherMs.push(ms);
    channelId = channel.channelId;
  }
  const elapsed = performance.now() - started;
  const v = stats(voucherMs);
  console.log(`\n${PAYMENTS} payments through POST /pay to one stock batch-settlement seller in ${(elapsed / 1000).toFixed(1)} s`);
  console.log(
    `  deposit request ${depositMs.toFixed(1)} ms; vouchers: median ${v.median.toFixed(1)} ms, p95 ${v.p95.toFixed(1)} ms, max ${v.max.toFixed(1)} ms`,
  );
  console.log(`  channel ${channelId}, deposit ${usd(deposit)} (${DEPOSIT_REQUESTS} requests), charged ${usd(charged)}`);
  check("deposits (on-chain transactions) for all the payments", deposits, 1);
  check("paid requests the seller served", seller.served, PAYMENTS);
  check("vouchers (payments with no transaction)", seller.settlements.filter((x) => x.transaction === "").length, PAYMENTS - 1);
  const doc = await s.svc.store.channels.findOne({ channelId });
  check("ledger: the channel's deposits", doc?.deposits.length, 1);
  check("ledger: the channel's charged (base units)", doc?.charged, charged);
  const ledger = await s.svc.store.payments.countDocuments({
    agentAddress: agent.agentAddress,
    status: "approved",
    scheme: "batch-settlement",
  });
  check("ledger: approved batch-settlement payments", ledger, PAYMENTS);
  check(
    "spentToday after the payments (the deposit, counted when authorised)",
    usd(await spentToday(s, agent.policyContract)),
    usd(deposit),
  );
  check("wallet balance after the payments", usd(await usdcBalance(s, agent.agentAddress)), usd(FUNDS - deposit));
  const held = await s.api("GET", `/limits?address=${agent.agentAddress}`, { key: agent.apiKey });
  check("GET /limits heldInChannels", held.body.agents?.[0]?.heldInChannels, fromBaseUnits(refund));

  console.log("\nthe seller claims and settles (BatchSettlementChannelManager.claimAndSettle):");
  const { claims, settle } = await seller.manager.claimAndSettle();
  console.log(
    `  claims ${claims.length} (vouchers ${claims.reduce((n, c) => n + c.vouchers, 0)}), settle ${settle?.transaction ?? "none"}`,
  );
  check("seller's balance after settle", usd(await usdcBalance(s, seller.payTo)), usd(charged));

  console.log("\nthe owner closes the channel (POST /agents/:address/channels/:channelId/close):");
  const t = performance.now();
  const closed = await s.api("POST", `/agents/${agent.agentAddress}/channels/${channelId}/close`, { key: agent.apiKey });
  console.log(`  answered ${closed.status} in ${(performance.now() - t).toFixed(0)} ms: ${JSON.stringify(closed.body)}`);
  check("close status", closed.status, 200);
  check("refunded", closed.body.refunded, fromBaseUnits(refund));
  check("credited back now", closed.body.creditedNow, fromBaseUnits(refund));
  check("spentToday after the close (dropped by the refund)", usd(await spentToday(s, agent.policyContract)), usd(charged));
  check("wallet balance after the close", usd(await usdcBalance(s, agent.agentAddress)), usd(FUNDS - charged));
  const after = await s.api("GET", `/limits?address=${agent.agentAddress}`, { key: agent.apiKey });
  check("GET /limits heldInChannels after the close", after.body.agents?.[0]?.heldInChannels, "0");

  await seller.close();
  await s.close();
  if (failures.length) {
    console.error(`\n${failures.length} check(s) failed: ${failures.join("; ")}`);
    process.exit(1);
  }
  console.log("\nall checks passed");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
