/**
 * The event-only audit and the indexer on x402 scheme payments, with real parts: the embedded chain (the sandbox
 * channel contract, deposit collector, Permit2 and upto proxy at their canonical addresses), a SpendPolicy wallet of
 * the chain's factory paying through the STOCK @x402/evm batch-settlement and upto clients, and the stock server and
 * facilitator as the sellers. A channel: deposits (one top-up), vouchers, the seller's claim and settle, a refund,
 * creditChannel; an upto ceiling settled below it, creditCeiling. The audit explains every outflow (deposits to the
 * collector, the ceiling's Permit2 transfer) from events alone and rebuilds the day's spend; a transfer nothing
 * authorised is still reported. The indexer stores SchemePayment and SchemeCredited in chainEvents.
 */
import { expect } from "chai";
import hre from "hardhat";
import { Contract, JsonRpcProvider, JsonRpcSigner, Wallet, formatUnits, getAddress } from "ethers";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { X402_SCHEME_ADDRESSES } from "../../src/dev/x402Schemes";
import { ChainClient } from "../../src/chain/client";
import { connectStore, type Store } from "../../src/store";
import { Indexer } from "../../src/indexer/indexer";
import { auditFromLogs } from "../../src/audit/audit";
import { ledgerDisagreements } from "../../src/audit/ledgerAudit";
import type { SpendPolicy, TestUSDC } from "../../typechain-types";
import { auditOutput, runScript } from "../helpers/auditCli";
import { quietLogger } from "../helpers/indexerFixture";
import { ALLOWLIST, NO_APPROVAL, deployAgentFor, proofFor } from "../helpers/policyFixture";
import { MERCHANT, PolicedBatchScheme, PolicedUptoScheme, type PolicedWallet } from "../helpers/policedSchemes";
import { stockCeiling } from "../helpers/uptoFixture";
import { payingFetch } from "../helpers/schemeBuyers";
import { startBatchSeller, startUptoSeller, stockSchemeFacilitator, type StockFacilitator } from "../helpers/schemeSellers";

const PRICE = 1_000n; // 0.001 USDC a request
const REQUESTS = 12; // the stock client deposits 10 requests' worth: one deposit, one top-up, some left to refund
const CEILING = 500_000n;
const USED = 123_456n;

describe("audit and indexer: x402 channel deposits and upto ceilings, from events alone", function () {
  let chain: EmbeddedChain;
  let mongo: EmbeddedMongo;
  let store: Store;
  let usdc: TestUSDC;
  let policy: SpendPolicy;
  let w: PolicedWallet;
  let facilitator: StockFacilitator;
  const closers: (() => Promise<unknown>)[] = [];

  const cli = () =>
    runScript(["scripts/audit.ts", "--rpc", chain.rpcUrl, "--factory", chain.addresses.factory, "--from-block", String(chain.deployBlock)]);
  const audit = () =>
    auditFromLogs(hre.ethers.provider, { factory: chain.addresses.factory, usdc: chain.addresses.usdc, fromBlock: chain.deployBlock });

  before(async function () {
    chain = await startEmbeddedChain();
    closers.push(() => chain.close());
    usdc = await hre.ethers.getContractAt("TestUSDC", chain.addresses.usdc);
    const factory = await hre.ethers.getContractAt("SpendPolicyFactory", chain.addresses.factory);
    const operator = new Wallet(chain.operator.privateKey, hre.ethers.provider);
    const [owner] = await hre.ethers.getSigners();
    const agentKey = Wallet.createRandom();
    policy = await deployAgentFor(factory, operator, agentKey.address, owner.address, owner);
    const agent = await policy.getAddress();
    await (await usdc.mint(agent, 10_000_000n)).wait();
    const schemes = await hre.ethers.getContractAt("SpendPolicySchemes", agent);
    w = { agent, agentKey, schemes, operator };
    const key = Wallet.createRandom();
    await hre.network.provider.request({ method: "hardhat_setBalance", params: [key.address, "0x3635C9ADC5DEA00000"] });
    facilitator = stockSchemeFacilitator(chain.rpcUrl, key.privateKey);
  });
  after(async function () {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  });

  let batch: PolicedBatchScheme;
  let upto: PolicedUptoScheme;
  let payTo: { channel: string; upto: string };

  it("a channel (deposit, top-up, vouchers, claim, settle, refund, credit) and a ceiling settled below it, then credited", async function () {
    // The channel: every request through the stock client, deposits authorised by the operator first.
    const seller = await startBatchSeller({ facilitator: facilitator.client, usdc: chain.addresses.usdc, price: PRICE });
    closers.push(() => seller.close());
    batch = new PolicedBatchScheme(w, chain.rpcUrl);
    const pay = payingFetch(batch);
    for (let i = 0; i < REQUESTS; i++) {
      const res = await pay(seller.resource);
      expect(res.status, `request ${i}: ${await res.clone().text()}`).to.equal(200);
    }
    expect(batch.authorised.map((a) => a.kind)).to.deep.equal(["deposit", "deposit"]);
    const deposited = batch.authorised.reduce((s, a) => s + a.amount, 0n);
    const spent = BigInt(REQUESTS) * PRICE;
    const { settle } = await seller.manager.claimAndSettle();
    expect(settle?.transaction).to.match(/^0x[0-9a-f]{64}$/);
    expect(await usdc.balanceOf(seller.payTo)).to.equal(spent);
    const refund = await batch.refund(seller.resource);
    expect(refund.success, JSON.stringify(refund)).to.equal(true);
    expect(refund.amount).to.equal((deposited - spent).toString());
    const last = batch.authorised[1];
    await (await w.schemes.connect(w.operator).creditChannel(last.id)).wait();
    expect(await policy.spentToday()).to.equal(spent);

    // The ceiling: the stock upto client signs CEILING, the seller settles USED, the rest is credited back.
    const metered = await startUptoSeller({ facilitator: facilitator.client, usdc: chain.addresses.usdc, ceiling: CEILING });
    closers.push(() => metered.close());
    metered.setUsage(USED);
    upto = new PolicedUptoScheme(w);
    const res = await payingFetch(upto)(metered.resource);
    expect(res.status, await res.clone().text()).to.equal(200);
    expect(await usdc.balanceOf(metered.payTo)).to.equal(USED);
    await (await w.schemes.connect(w.operator).creditCeiling(upto.authorised[0].id)).wait();
    expect(await policy.spentToday()).to.equal(spent + USED);
    payTo = { channel: getAddress(seller.payTo), upto: getAddress(metered.payTo) };
  });

  it("the audit explains every outflow (deposits to the collector, the ceiling's Permit2 transfer) and rebuilds the day's spend", async function () {
    const report = await audit();
    expect(report.inconsistencies).to.deep.equal([]);
    const a = report.agents[w.agent];
    const [d1, d2] = batch.authorised;
    const [c] = upto.authorised;
    const collector = X402_SCHEME_ADDRESSES.erc3009DepositCollector;
    expect(a.outflows.map((o) => [o.token, o.to, o.amount, o.explainedBy, o.paymentId])).to.deep.equal([
      ["USDC", collector, d1.amount.toString(), "deposit", d1.id],
      ["USDC", collector, d2.amount.toString(), "deposit", d2.id],
      ["USDC", payTo.upto, USED.toString(), "ceiling", c.id],
    ]);
    const spent = BigInt(REQUESTS) * PRICE;
    const back = d1.amount + d2.amount - spent;
    expect(a.payments.map((p) => [p.paymentId, p.status, p.amount, p.payTo, p.scheme])).to.deep.equal([
      [
        d1.id,
        "settled",
        d1.amount.toString(),
        payTo.channel,
        { name: "batch-settlement", ref: d1.ref, moved: d1.amount.toString(), credited: null, creditTx: null },
      ],
      [
        d2.id,
        "credited",
        d2.amount.toString(),
        payTo.channel,
        {
          name: "batch-settlement",
          ref: d2.ref,
          moved: d2.amount.toString(),
          credited: back.toString(),
          creditTx: a.payments[1].releaseTx,
        },
      ],
      [
        c.id,
        "credited",
        CEILING.toString(),
        payTo.upto,
        { name: "upto", ref: c.ref, moved: USED.toString(), credited: (CEILING - USED).toString(), creditTx: a.payments[2].releaseTx },
      ],
    ]);
    expect(a.channels).to.deep.equal([
      {
        channelId: d1.ref,
        deposits: [d1.id, d2.id],
        authorized: (d1.amount + d2.amount).toString(),
        landed: (d1.amount + d2.amount).toString(),
        returned: back.toString(),
        credited: back.toString(),
      },
    ]);
    expect(Object.values(a.days).at(-1)).to.equal((await policy.spentToday()).toString());

    // The ledger held against it: a deposit that landed and a ceiling settled under are paid, credited since or not.
    const ledger = a.payments.map((p, i) => ({
      id: `txn_${i}`,
      agentAddress: w.agent,
      amount: formatUnits(p.amount, 6),
      status: "approved",
      reason: null,
      txHash: p.settleTx,
      paymentId: p.paymentId,
      payTo: p.payTo,
      authorizeTxHash: p.authorizeTx,
      releaseTxHash: null,
    }));
    expect(ledgerDisagreements(report, ledger)).to.deep.equal([]);

    // `npm run audit`, as an auditor runs it.
    const run = await cli();
    expect(run.code, run.stderr).to.equal(0);
    expect(auditOutput(run.stdout).summary).to.match(/^audit: 1 agents, \d+ events, 0 anomalies$/);
  });

  it("the indexer stores SchemePayment and SchemeCredited in chainEvents, decoded", async function () {
    mongo = await startEmbeddedMongo();
    closers.push(() => mongo.stop());
    store = await connectStore(mongo.uri, "schemes_audit");
    closers.push(() => store.close());
    const client = new ChainClient({
      rpcUrl: chain.rpcUrl,
      chainId: chain.chainId,
      operatorPrivateKey: chain.operator.privateKey,
      factoryAddress: chain.addresses.factory,
      usdcAddress: chain.addresses.usdc,
    });
    closers.push(() => {
      client.destroy();
      return Promise.resolve();
    });
    const indexer = new Indexer({
      chain: client,
      store,
      chainId: chain.chainId,
      confirmations: 0,
      startBlock: chain.deployBlock,
      logger: quietLogger(),
    });
    await indexer.syncOnce();
    const events = await store.chainEvents
      .find({ event: { $in: ["SchemePayment", "SchemeCredited"] } })
      .sort({ blockNumber: 1, logIndex: 1 })
      .toArray();
    const [d1, d2] = batch.authorised;
    const [c] = upto.authorised;
    expect(events.map((e) => [e.event, e.address, e.agentAddress, e.paymentId, e.args.scheme, e.args.ref])).to.deep.equal([
      ["SchemePayment", w.agent, w.agent, d1.id, "1", d1.ref],
      ["SchemePayment", w.agent, w.agent, d2.id, "1", d2.ref],
      ["SchemeCredited", w.agent, w.agent, d2.id, "1", d2.ref],
      ["SchemePayment", w.agent, w.agent, c.id, "2", c.ref],
      ["SchemeCredited", w.agent, w.agent, c.id, "2", c.ref],
    ]);
    expect(events.filter((e) => e.event === "SchemePayment").map((e) => e.args.authorized)).to.deep.equal([true, true, true]);
    expect(events.filter((e) => e.event === "SchemeCredited").map((e) => e.args.amount)).to.deep.equal([
      (d1.amount + d2.amount - BigInt(REQUESTS) * PRICE).toString(),
      (CEILING - USED).toString(),
    ]);
  });

  it("a refused ceiling (over perTxLimit): PaymentBlocked named upto by its SchemePayment, nothing counted", async function () {
    const spentBefore = await policy.spentToday();
    const payee = Wallet.createRandom().address;
    const c = await stockCeiling(
      { agent: w.agent, agentKey: w.agentKey, tokenAddress: chain.addresses.usdc },
      payee,
      6_000_000n,
      facilitator.address,
    );
    const { leaf, proof } = proofFor(ALLOWLIST, MERCHANT);
    await (await w.schemes.connect(w.operator).authorizeCeiling(c.id, MERCHANT, leaf, proof, c.ceiling, NO_APPROVAL)).wait();
    const report = await audit();
    expect(report.inconsistencies).to.deep.equal([]);
    const a = report.agents[w.agent];
    expect(a.blocked.map((b) => [b.paymentId, b.reason, b.amount, b.scheme?.name])).to.deep.equal([
      [c.id, "per_tx_limit_exceeded", "6000000", "upto"],
    ]);
    expect(a.payments.map((p) => p.paymentId)).to.not.include(c.id);
    expect(Object.values(a.days).at(-1)).to.equal(spentBefore.toString());
  });

  it("still reports USDC no authorisation explains: to a stranger, to the collector with no deposit landing, to a credited ceiling's payee", async function () {
    const thief = getAddress(Wallet.createRandom().address);
    const rpc = new JsonRpcProvider(chain.rpcUrl);
    const sent: string[] = [];
    try {
      await rpc.send("hardhat_impersonateAccount", [w.agent]);
      await rpc.send("hardhat_setBalance", [w.agent, "0xde0b6b3a7640000"]);
      const token = new Contract(
        chain.addresses.usdc,
        ["function transfer(address,uint256) returns (bool)"],
        new JsonRpcSigner(rpc, w.agent),
      );
      for (const [to, amount] of [
        [thief, 7n],
        [X402_SCHEME_ADDRESSES.erc3009DepositCollector, 10_000n],
        [payTo.upto, 1n], // the ceiling to it was credited: its Permit2 allowance is gone
      ] as const) {
        sent.push((await (await token.transfer(to, amount)).wait()).hash);
      }
      await rpc.send("hardhat_stopImpersonatingAccount", [w.agent]);
    } finally {
      rpc.destroy();
    }
    const report = await audit();
    const usdcAddress = getAddress(chain.addresses.usdc);
    const run = await cli();
    expect(run.code, run.stderr).to.equal(1);
    expect(auditOutput(run.stdout).report.inconsistencies).to.deep.equal(report.inconsistencies);
    expect(report.inconsistencies).to.deep.equal([
      `7 USDC (${usdcAddress}) left ${w.agent} to ${thief} in ${sent[0]}: no authorised settlement, withdrawal or swap explains it`,
      `10000 USDC (${usdcAddress}) left ${w.agent} to ${X402_SCHEME_ADDRESSES.erc3009DepositCollector} in ${sent[1]}: no authorised settlement, withdrawal or swap explains it`,
      `1 USDC (${usdcAddress}) left ${w.agent} to ${payTo.upto} in ${sent[2]}: no authorised settlement, withdrawal or swap explains it`,
    ]);
  });
});
