/**
 * npm run bench, the other x402 schemes (issue 26), under the same chain modes as the exact comparison:
 *   - batch-settlement: repeated purchases from one stock seller (@x402/evm's batch-settlement server and facilitator
 *     over real HTTP), SpendGate's POST /pay next to the STOCK client (@x402/core x402Client + @x402/fetch with
 *     @x402/evm's BatchSettlementEvmScheme, an EOA buyer) paying the same seller, interleaved. Both sides size their
 *     deposit at CHANNEL_DEPOSIT_BENCH requests (SpendGate: CHANNEL_DEPOSIT_REQUESTS, the stock client: its
 *     depositStrategy hook), so after the first request (the deposit, reported on its own) every measured request is a
 *     voucher. SpendGate's overhead is measured pair by pair over the stock client, net of the seller's own handler
 *     time for each (target: p50 < 5 ms): the seller's facilitator checks a contract wallet's voucher on-chain (ERC-1271:
 *     its getCode and calls) and an EOA's with none, which is the seller's cost, reported on its own line with its
 *     JSON-RPC calls. At automine the store commands and JSON-RPC calls SpendGate itself makes per voucher are counted
 *     (counts.ts) and printed as `voucher: N store commands, M chain calls, overhead p50 X ms`;
 *   - upto vs exact: one SpendGate purchase from a stock upto seller (ceiling authorised, part settled, the rest
 *     credited back) next to one from a stock exact seller of the same shape and price, interleaved at the same phase.
 * A fresh seller per mode, so each mode opens its channels anew.
 */
import { Wallet, type JsonRpcProvider } from "ethers";
import { x402Client } from "@x402/core/client";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { viemAccounts } from "../../src/chain/viem";
import { randomOwner, type Stack } from "../../test/helpers/stack";
import { mintUsdc } from "../../test/helpers/sellers";
import {
  NETWORK,
  startBatchSeller,
  startExactSeller,
  startUptoSeller,
  stockSchemeFacilitator,
  type SchemeSeller,
} from "../../test/helpers/schemeSellers";
import type { CommandCounter } from "./counts";
import { setBlockInterval } from "./mining";
import type { RpcProxy } from "./rpcProxy";
import { ROW_HEADER, type Sample, interleavedPairs, row, stats, timed } from "./sampling";

/** The deposit both channel buyers make, in requests (the service's CHANNEL_DEPOSIT_REQUESTS must say the same). */
export const CHANNEL_DEPOSIT_BENCH = 1000;
const CHANNEL_PRICE = 1_000n; // 0.001 USDC a request
const METERED_CEILING = 10_000n; // 0.01 USDC: the upto ceiling and the exact price
const METERED_USAGE = 6_000n; // what the upto seller settles of it
const OVERHEAD_TARGET_MS = 5;
const WARMUP = 3;

export interface SchemeBenchOptions {
  modes: string[];
  latency: number;
  runs: number;
  runsBlocks: number;
  /** Vouchers counted one by one at automine. */
  counted: number;
}

export async function schemeLatency(
  s: Stack,
  proxy: RpcProxy,
  direct: JsonRpcProvider,
  counter: CommandCounter,
  opts: SchemeBenchOptions,
): Promise<string[]> {
  if (s.svc.config.channelDepositRequests !== CHANNEL_DEPOSIT_BENCH) {
    throw new Error(`the bench's service must run with CHANNEL_DEPOSIT_REQUESTS=${CHANNEL_DEPOSIT_BENCH}`);
  }
  const usdc = s.svc.config.usdcAddress;
  const key = Wallet.createRandom();
  await direct.send("hardhat_setBalance", [key.address, `0x${(10n ** 21n).toString(16)}`]);
  // The seller's facilitator reads and sends through the proxy too (s.svc.config.rpcUrl is the proxy's).
  const facilitator = stockSchemeFacilitator(s.svc.config.rpcUrl, key.privateKey);
  const agent = await s.onboard(randomOwner(), { perTxLimit: "5", dailyBudget: "1000", approvalThreshold: "5", allowlist: ["127.0.0.1"] });
  await mintUsdc(s, agent.agentAddress, 100_000_000n);
  const account = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey());
  await mintUsdc(s, account.address, 100_000_000n);
  // The stock client sizes a deposit at the seller's announced minDeposit (the stock server announces 10 requests'
  // worth) before its depositMultiplier; its depositStrategy hook sets the same deposit as SpendGate's instead.
  const depositOf = (c: { requestAmount: string }) => (BigInt(c.requestAmount) * BigInt(CHANNEL_DEPOSIT_BENCH)).toString();
  const stockClient = new x402Client();
  stockClient.register(NETWORK, new BatchSettlementEvmScheme(account, { rpcUrl: s.svc.config.rpcUrl, depositStrategy: depositOf }));
  const stockFetch = wrapFetchWithPayment(fetch, stockClient);

  const viaSpendGate = (seller: SchemeSeller, maxAmount: string) => async () => {
    const res = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount, intent: "bench" },
    });
    if (res.status !== 200) throw new Error(`POST /pay answered ${res.status}: ${JSON.stringify(res.body)}`);
  };
  const viaStock = (seller: SchemeSeller) => async () => {
    const res = await stockFetch(seller.resource);
    if (res.status !== 200) throw new Error(`stock batch-settlement client answered ${res.status}: ${await res.text()}`);
    await res.text();
  };
  /** The payment's sample and the seller's handler time for its requests (the 402 and the paid one). */
  const withHandler = async (seller: SchemeSeller, fn: () => Promise<void>) => {
    const from = seller.handlerMs.length;
    const sample = await timed(proxy, fn);
    return { sample, handler: seller.handlerMs.slice(from).reduce((a, b) => a + b, 0) };
  };

  const summary: string[] = [];
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  for (const mode of opts.modes) {
    const interval = mode === "automine" ? 0 : Number(mode);
    const latency = interval ? opts.latency : 0;
    await setBlockInterval(direct, interval);
    proxy.setLatency(latency);
    const runs = interval ? opts.runsBlocks : opts.runs;
    const title = interval ? `blocks every ${interval} ms, ${latency} ms on every JSON-RPC call` : "automine, no added RPC latency";

    // batch-settlement: the first request of each side deposits; the rest are vouchers on that deposit.
    const seller = await startBatchSeller({ facilitator: facilitator.client, usdc, price: CHANNEL_PRICE });
    const sgPay = viaSpendGate(seller, "0.01");
    const stockPay = viaStock(seller);
    const sgDeposit = await timed(proxy, sgPay);
    const stockDeposit = await timed(proxy, stockPay);
    for (let i = 1; i < WARMUP; i++) {
      await sgPay();
      await stockPay();
    }
    const sg: Sample[] = [];
    const stock: Sample[] = [];
    const overStock: number[] = [];
    const overHandler: number[] = [];
    const overNet: number[] = [];
    const sellerExtra: number[] = [];
    for (let i = 0; i < runs; i++) {
      // Alternate which goes first so neither benefits from the other's warm caches.
      const [first, second] = i % 2 === 0 ? [sgPay, stockPay] : [stockPay, sgPay];
      const one = await withHandler(seller, first);
      const two = await withHandler(seller, second);
      const [a, b] = i % 2 === 0 ? [one, two] : [two, one];
      sg.push(a.sample);
      stock.push(b.sample);
      overStock.push(a.sample.ms - b.sample.ms);
      overHandler.push(a.sample.ms - a.handler);
      // What each side spends outside the seller's handler: SpendGate's own work against the stock client's.
      overNet.push(a.sample.ms - a.handler - (b.sample.ms - b.handler));
      sellerExtra.push(a.handler - b.handler);
    }
    const onChain = seller.settlements.slice(2 * WARMUP).filter((x) => x.transaction !== "").length;
    if (onChain !== 0) throw new Error(`${onChain} measured channel requests sent a transaction: not all were vouchers`);
    console.log(`\n== batch-settlement, one stock seller, ${title}: ${runs} voucher payments each, interleaved`);
    console.log(
      `   (deposits of ${CHANNEL_DEPOSIT_BENCH} requests x 0.001 USDC; the first request of each side deposited, then ${WARMUP - 1} warm-up rounds)`,
    );
    console.log(ROW_HEADER);
    console.log(row("SpendGate deposit", [sgDeposit]));
    console.log(row("stock deposit", [stockDeposit]));
    console.log(row("SpendGate POST /pay", sg));
    console.log(row("stock batch client", stock));
    const o = stats(overStock);
    const h = stats(overHandler);
    const net = stats(overNet);
    const extra = stats(sellerExtra);
    const handler = stats(sg.map((x, i) => x.ms - overHandler[i]));
    console.log(`seller's handler time per SpendGate payment (402 + paid request): median ${ms(handler.median)}, p95 ${ms(handler.p95)}`);
    console.log(`SpendGate - stock client, pair by pair: median ${ms(o.median)}, p95 ${ms(o.p95)}`);
    console.log(`SpendGate - the seller's own handler time: median ${ms(h.median)}, p95 ${ms(h.p95)}`);
    if (!interval) {
      // The seller's facilitator's calls for a SpendGate voucher (its ERC-1271 check of the contract wallet): the calls
      // the proxy saw during the payment less SpendGate's own, which the counter counts where they are made.
      for (let i = 0; i < WARMUP; i++) await sgPay();
      const seen = proxy.total();
      const counted = await counter.perPayment(sgPay, opts.counted);
      const sellers = (proxy.total() - seen) / opts.counted - counted.rpcMean;
      console.log(
        `seller's contract-wallet checks (the seller's cost): +${ms(extra.median)} p50 of its handler time per voucher over the stock EOA's, ${sellers.toFixed(1)} JSON-RPC calls by its facilitator`,
      );
      console.log(
        `\nvoucher: ${counted.store} store commands, ${counted.rpc} chain calls, overhead p50 ${ms(net.median)} (by SpendGate, per voucher: the median; overhead over the stock client net of the seller's handler time)`,
      );
      console.log(counted.summary);
    }
    const pass = net.median < OVERHEAD_TARGET_MS ? "PASS" : "MISS";
    console.log(
      `target: p50 overhead over the stock client, net of the seller's handler time, < ${OVERHEAD_TARGET_MS} ms: ${ms(net.median)} ${pass} (p95 ${ms(net.p95)})`,
    );
    summary.push(`${interval ? `${interval} ms blocks` : "automine"}: channel overhead p50 ${ms(net.median)} ${pass}`);
    await seller.close();

    // upto vs exact, same seller shape and price, at the same phase of the block interval.
    const upto = await startUptoSeller({ facilitator: facilitator.client, usdc, ceiling: METERED_CEILING });
    upto.setUsage(METERED_USAGE);
    const exact = await startExactSeller({ facilitator: facilitator.client, usdc, price: METERED_CEILING });
    const uptoPay = viaSpendGate(upto, "0.01");
    const exactPay = viaSpendGate(exact, "0.01");
    for (let i = 0; i < WARMUP; i++) {
      await uptoPay();
      await exactPay();
    }
    const [u, e] = await interleavedPairs(direct, proxy, interval, runs, uptoPay, exactPay);
    console.log(`\n== upto vs exact through POST /pay, stock sellers of one shape, ${title}: ${runs} payments each, interleaved`);
    console.log(`   (upto: ceiling 0.01 USDC, the seller settles 0.006, the rest credited back; exact: 0.01 USDC)`);
    console.log(ROW_HEADER);
    console.log(row("SpendGate upto", u));
    console.log(row("SpendGate exact", e));
    const d = stats(u.map((x, i) => x.ms - e[i].ms));
    console.log(`upto - exact, pair by pair: median ${ms(d.median)}, p95 ${ms(d.p95)}`);
    summary.push(`${interval ? `${interval} ms blocks` : "automine"}: upto - exact p50 ${ms(d.median)}`);
    await upto.close();
    await exact.close();
  }
  await setBlockInterval(direct, 0);
  proxy.setLatency(0);
  return summary;
}
