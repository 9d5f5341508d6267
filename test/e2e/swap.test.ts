/**
 * POST /pay with a swap before settlement, end to end on the real Uniswap v3 contracts: an agent holding only WETH
 * (or only ETH) pays a v2 x402 seller; a sandwich between the service's quote and its swap is refused on-chain.
 */
import { expect } from "chai";
import hre from "hardhat";
import { Contract, Transaction, Wallet } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../../src/chain/addresses";
import { quoteSwap } from "../../src/chain/swapQuote";
import { auditFromLogs } from "../../src/audit/audit";
import { ledgerDisagreements } from "../../src/audit/ledgerAudit";
import { paymentView, paymentWhere } from "../../src/services/presenters";
import { LedgerLinker } from "../../src/indexer/ledgerLinks";
import { SwapService } from "../../src/payments/swap";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { approvalDecision, spentToday } from "../helpers/payments";
import { ownerKey } from "../helpers/owner";
import { withSeller, startMisbehavingSeller, usdcBalance } from "../helpers/sellers";
import { fundTrader, uniswapAt, TOKEN_ABI } from "../helpers/uniswap";
import { agentHeaders, callTool, mcpClient, textOf } from "../mcp/client";

const USDC = 1_000_000n;
const ETH = 10n ** 18n;
const SWAPS_ON = { maxSwapSlippageBps: 100, swapTwapSeconds: 600 };

describe("POST /pay with a swap before settlement (real Uniswap v3, real x402 seller)", () => {
  const { s, seller } = withSeller(stackPerFile(), 2n * USDC);
  let owner: Wallet;

  before(() => {
    owner = randomOwner();
  });

  const uniswap = () => s.svc.embeddedChain!.addresses.uniswap!;
  const weth = () => new Contract(WETH_ADDRESS, TOKEN_ABI, hre.ethers.provider);
  const balances = async (agent: string) => ({
    usdc: await usdcBalance(s, agent),
    weth: (await weth().balanceOf(agent)) as bigint,
    eth: await hre.ethers.provider.getBalance(agent),
  });
  async function agent(policy: Record<string, unknown>, faucet: { token: "WETH" | "ETH"; amount: string } | null) {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
    if (faucet) {
      const res = await s.api("POST", "/dev/faucet", { body: { agentAddress: a.agentAddress, ...faucet } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
    return a;
  }
  const pay = (a: { agentAddress: string; apiKey: string }) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: "swap e2e purchase" },
    });
  const bound = async (amountOut: bigint) => {
    const q = await quoteSwap(hre.ethers.provider, {
      factory: uniswap().factory,
      quoterV2: uniswap().quoterV2,
      tokenIn: WETH_ADDRESS,
      tokenOut: s.svc.config.usdcAddress,
      fee: UNISWAP_POOL_FEE,
      amountOut,
      twapSeconds: SWAPS_ON.swapTwapSeconds,
      maxSlippageBps: SWAPS_ON.maxSwapSlippageBps,
    });
    if (!q.ok) throw new Error(`quote refused: ${q.reason}`);
    return q.quote;
  };
  const ledger = async (a: { agentAddress: string; apiKey: string }) =>
    (await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey })).body.transactions as Record<string, any>[];

  it("an agent holding only WETH pays: the seller gets exactly the price, the WETH spent is within the bound, one ledger entry with the swap", async () => {
    const a = await agent(SWAPS_ON, { token: "WETH", amount: "1" });
    const q = await bound(2n * USDC);
    const sellerBefore = await usdcBalance(s, seller.payTo);
    const before = await balances(a.agentAddress);
    const res = await pay(a);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const after = await balances(a.agentAddress);
    expect(await usdcBalance(s, seller.payTo)).to.equal(sellerBefore + 2n * USDC);
    expect(after.usdc).to.equal(0n);
    const spent = before.weth - after.weth;
    expect(spent).to.equal(q.amountIn);
    expect(spent <= q.maxAmountIn).to.equal(true);
    expect(after.eth).to.equal(before.eth);
    expect(res.body.swap).to.deep.equal({
      txHash: res.body.swap.txHash,
      tokenIn: "WETH",
      amountIn: hre.ethers.formatEther(spent),
      amountOut: "2",
    });
    expect(res.body.swap.txHash).to.match(/^0x[0-9a-f]{64}$/);
    const entries = await ledger(a);
    expect(entries).to.have.length(1);
    expect(entries[0]).to.deep.include({ status: "approved", amount: "2", txHash: res.body.txHash, swap: res.body.swap });
    // The indexer read SwapExecuted too.
    await s.svc.indexer.syncOnce();
    const event = await s.svc.store.chainEvents.findOne({ event: "SwapExecuted", txHash: res.body.swap.txHash });
    expect(event?.args).to.deep.include({ tokenIn: WETH_ADDRESS, amountIn: spent.toString(), amountOut: "2000000" });
    // An entry that lost its answer (a restart between the swap and the reply) gets the swap back from the event.
    await s.svc.store.payments.updateOne({ txnId: res.body.transactionId }, { $unset: { swap: "" } });
    expect((await ledger(a))[0].swap).to.equal(null);
    await new LedgerLinker({ store: s.svc.store, chainId: s.svc.chain.chainId }).link([event!]);
    expect((await ledger(a))[0].swap).to.deep.equal(res.body.swap);
  });

  it("an agent holding only ETH pays: it wraps what the swap needs and keeps the rest as ETH", async () => {
    const a = await agent(SWAPS_ON, { token: "ETH", amount: "1" });
    const q = await bound(2n * USDC);
    const before = await balances(a.agentAddress);
    const res = await pay(a);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const after = await balances(a.agentAddress);
    expect(res.body.swap).to.include({ tokenIn: "ETH", amountOut: "2" });
    expect(before.eth - after.eth).to.equal(q.amountIn);
    expect(after.weth).to.equal(0n);
    expect(after.usdc).to.equal(0n);
    expect((await ledger(a))[0].swap).to.deep.equal(res.body.swap);
  });

  it("concurrent payments of one WETH-only agent each buy their own shortfall, exactly once", async () => {
    const a = await agent(SWAPS_ON, { token: "WETH", amount: "1" });
    const sellerBefore = await usdcBalance(s, seller.payTo);
    const results = await Promise.all([pay(a), pay(a), pay(a)]);
    expect(
      results.map((r) => r.status),
      JSON.stringify(results.map((r) => r.body)),
    ).to.deep.equal([200, 200, 200]);
    expect(new Set(results.map((r) => r.body.swap.txHash)).size).to.equal(3);
    for (const r of results) expect(r.body.swap.amountOut).to.equal("2");
    expect(await usdcBalance(s, seller.payTo)).to.equal(sellerBefore + 6n * USDC);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(0n);
    expect((await ledger(a)).map((e) => e.status)).to.deep.equal(["approved", "approved", "approved"]);
  });

  it("a sandwich between the service's quote and its swap: refused on-chain, blocked swap_slippage_exceeded, nothing lost but gas", async () => {
    const a = await agent(SWAPS_ON, { token: "WETH", amount: "1" });
    const [, , , , , , , trader] = await hre.ethers.getSigners();
    await fundTrader(uniswap(), s.svc.config.usdcAddress, trader, 200n * ETH, 0n);
    const router = uniswapAt(uniswap(), trader).router;
    const selector = s.svc.chain.policyAt(a.policyContract).interface.getFunction("swapForPayment").selector;
    // A bot watching the chain: it sees the wallet's swap coming and sells 100 WETH into the pool first.
    const provider = hre.network.provider as unknown as { request(args: { method: string; params?: unknown[] }): Promise<unknown> };
    const original = provider.request.bind(provider);
    let frontRuns = 0;
    provider.request = async (args) => {
      if (args.method === "eth_sendRawTransaction" && frontRuns === 0) {
        const tx = Transaction.from(String(args.params?.[0]));
        if (tx.data.startsWith(selector)) {
          frontRuns++;
          await (
            await router.exactInputSingle({
              tokenIn: WETH_ADDRESS,
              tokenOut: s.svc.config.usdcAddress,
              fee: UNISWAP_POOL_FEE,
              recipient: trader.address,
              amountIn: 100n * ETH,
              amountOutMinimum: 0,
              sqrtPriceLimitX96: 0,
            })
          ).wait();
        }
      }
      return original(args);
    };
    const before = await balances(a.agentAddress);
    const paidBefore = seller.hits.paid;
    let res;
    try {
      res = await pay(a);
    } finally {
      provider.request = original;
    }
    expect(frontRuns).to.equal(1);
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body).to.include({ status: "blocked", reason: "swap_slippage_exceeded", onchainEvent: "PaymentBlocked", amount: "2" });
    expect(await balances(a.agentAddress)).to.deep.equal(before);
    expect(seller.hits.paid).to.equal(paidBefore);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    const receipt = await hre.ethers.provider.getTransactionReceipt(res.body.txHash);
    const iface = s.svc.chain.policyAt(a.policyContract).interface;
    const events = receipt!.logs.map((l) => iface.parseLog(l)).filter((e) => e !== null);
    expect(events.map((e) => e.name)).to.deep.equal(["PaymentBlocked", "PaymentReleased"]);
    expect(events[0].args.reason).to.equal(13n);
    const entries = await ledger(a);
    expect(entries).to.have.length(1);
    expect(entries[0]).to.deep.include({ status: "blocked", reason: "swap_slippage_exceeded", txHash: res.body.txHash, swap: null });
    // The back-run: the bot buys its WETH back, and the pool is about where it was.
    const usdcGot = await usdcBalance(s, trader.address);
    await (
      await router.exactInputSingle({
        tokenIn: s.svc.config.usdcAddress,
        tokenOut: WETH_ADDRESS,
        fee: UNISWAP_POOL_FEE,
        recipient: trader.address,
        amountIn: usdcGot,
        amountOutMinimum: 0,
        sqrtPriceLimitX96: 0,
      })
    ).wait();
  });

  it("the event-only audit attaches each swap to its payment and knows the swap refusals", async () => {
    const report = await auditFromLogs(s.svc.chain.provider, {
      factory: s.svc.config.factoryAddress,
      usdc: s.svc.config.usdcAddress,
      fromBlock: s.svc.config.factoryDeployBlock,
    });
    expect(report.inconsistencies).to.deep.equal([]);
    const payments = Object.values(report.agents).flatMap((a) => a.payments);
    const swapped = payments.filter((p) => p.swap);
    expect([...new Set(swapped.map((p) => p.swap!.tokenIn))].sort()).to.deep.equal([hre.ethers.ZeroAddress, WETH_ADDRESS].sort());
    const inLedger = await s.svc.store.payments.find({ swap: { $exists: true } }).toArray();
    expect(swapped.map((p) => p.swap!.txHash).sort()).to.deep.equal(inLedger.map((p) => p.swap!.txHash.toLowerCase()).sort());
    for (const p of swapped) expect(p).to.deep.include({ status: "settled", amount: "2000000" });
    const refused = Object.values(report.agents)
      .flatMap((a) => a.blocked)
      .filter((b) => b.reason === "swap_slippage_exceeded");
    expect(refused).to.have.length(1);
    expect(payments.find((p) => p.paymentId === refused[0].paymentId)).to.include({ status: "released", merchant: "127.0.0.1" });
    const ledger = (await s.svc.store.payments.find({}).toArray()).map((d) => paymentView(d, paymentWhere(s.svc.services.ctx, d)));
    expect(ledgerDisagreements(report, ledger)).to.deep.equal([]);
  });

  it("MCP: verify_merchant foresees the swap or the refusal, and pay shows the swap in its structured result and its text", async () => {
    const a = await agent(SWAPS_ON, { token: "WETH", amount: "1" });
    const client = await mcpClient(s.url, agentHeaders(a));
    const off = await agent({}, { token: "WETH", amount: "1" });
    const offClient = await mcpClient(s.url, agentHeaders(off));
    try {
      // verify_merchant says what pay will do: buy first, or refuse for want of funds.
      const v = (await callTool(client, "verify_merchant", { serviceUrl: seller.resource })).structuredContent;
      expect(v).to.include({ expectedOutcome: "approved", reason: null });
      expect(v.advice).to.match(/lacks 2 USDC: it would first buy it with about 0\.000\d+ WETH/);
      const vOff = (await callTool(offClient, "verify_merchant", { serviceUrl: seller.resource })).structuredContent;
      expect(vOff).to.include({ expectedOutcome: "blocked", reason: "insufficient_funds" });
      const r = await callTool(client, "pay", { serviceUrl: seller.resource, maxAmount: "5", intent: "swap over MCP" });
      expect(r.isError ?? false).to.equal(false);
      expect(r.structuredContent.swap).to.include({ tokenIn: "WETH", amountOut: "2" });
      expect(textOf(r)).to.contain(
        `First bought 2 USDC for ${r.structuredContent.swap.amountIn} WETH (swap ${r.structuredContent.swap.txHash})`,
      );
    } finally {
      await client.close();
      await offClient.close();
    }
  });

  it("a seller that fails after the swap: the payment is released (502), the USDC bought stays in the wallet and the answer says so", async () => {
    const a = await agent(SWAPS_ON, { token: "WETH", amount: "1" });
    const broken = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, price: 2n * USDC });
    try {
      const res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: broken.resource, maxAmount: "5", intent: "swap then a broken seller" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(502);
      expect(res.body.error).to.equal("upstream_error");
      expect(res.body.message).to.match(/The 2 USDC the swap bought \(.* WETH, tx 0x[0-9a-f]{64}\) stays in the agent wallet\./);
      expect(await usdcBalance(s, a.agentAddress)).to.equal(2n * USDC);
      expect(await spentToday(s, a.policyContract)).to.equal(0n);
      const [entry] = await ledger(a);
      expect(entry).to.include({ status: "failed" });
      expect(entry.swap).to.include({ tokenIn: "WETH", amountOut: "2" });
      expect(entry.releaseTxHash).to.match(/^0x[0-9a-f]{64}$/);
    } finally {
      await broken.close();
    }
  });

  it("a payment the owner approves also buys its shortfall first, and the approval answer carries the swap", async () => {
    const a = await agent({ ...SWAPS_ON, approvalThreshold: "1" }, { token: "WETH", amount: "1" });
    const res = await pay(a);
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const item = { id: res.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "2" };
    const ownerApiKey = await ownerKey(s, owner);
    const approved = await s.api("POST", `/approvals/${item.id}/approve`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "approve"),
    });
    expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
    expect(approved.body.swap).to.include({ tokenIn: "WETH", amountOut: "2" });
    expect(await usdcBalance(s, a.agentAddress)).to.equal(0n);
    expect((await ledger(a))[0]).to.deep.include({ status: "approved", swap: approved.body.swap });
  });

  it("an implementation without swapConfig (deployed before swaps), or no QuoterV2, means no swaps: insufficient_funds, not an error", async () => {
    const a = await agent(SWAPS_ON, { token: "WETH", amount: "1" });
    const doc = (await s.svc.store.agents.findOne({ address: a.agentAddress }))!;
    // USDC stands in for an old implementation: a contract that reverts on swapConfig().
    const swaps = new SwapService(s.svc.services.ctx);
    const old = await swaps.check(
      { ...doc, policyAddress: s.svc.config.usdcAddress },
      { maxSwapSlippageBps: 100n, swapTwapSeconds: 600n },
      USDC,
    );
    expect(old).to.deep.include({ kind: "refuse" });
    expect((old as { detail: string }).detail).to.match(/this deployment has no swaps/);
    // Nor does a UNISWAP_QUOTER_V2 with no code on this chain (an address for another network).
    const ctx = s.svc.services.ctx;
    const elsewhere = new SwapService({ ...ctx, config: { ...ctx.config, uniswapQuoterV2: Wallet.createRandom().address } });
    const noQuoter = await elsewhere.check(doc, { maxSwapSlippageBps: 100n, swapTwapSeconds: 600n }, USDC);
    expect((noQuoter as { detail: string }).detail).to.match(/this deployment has no swaps/);
  });

  it("refuses with insufficient_funds, sending nothing, when swaps are off or the wallet's WETH and ETH cannot buy the rest", async () => {
    const off = await agent({}, { token: "WETH", amount: "1" });
    const poor = await agent(SWAPS_ON, { token: "ETH", amount: "0.0001" });
    for (const [a, detail] of [
      [off, /allows no swaps/],
      [poor, /takes about .* WETH, and the wallet holds 0.0 WETH and 0.0001 ETH/],
    ] as const) {
      const block = await hre.ethers.provider.getBlockNumber();
      const res = await pay(a);
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "insufficient_funds", onchainEvent: null, txHash: null });
      expect(res.body.message).to.match(detail);
      expect(await hre.ethers.provider.getBlockNumber()).to.equal(block);
      expect((await ledger(a))[0]).to.include({ status: "blocked", reason: "insufficient_funds" });
    }
  });
});
