/**
 * Two networks in one service (NETWORKS=base,base-sepolia: one embedded chain each, Base's in this thread, Base
 * Sepolia's in a worker thread): an agent on each, each paid on its own chain by stock x402 sellers; a seller offering
 * only another network refused with nothing moving; the ledger and /limits name the network; the audit passes on both.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { ledgerEntry } from "../../src/payments/phases";
import { Contract, Wallet } from "ethers";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { RunningNetwork } from "../../src/server";
import { ownerKey, siweVerify } from "../helpers/owner";
import { auditOutput, runScript } from "../helpers/auditCli";
import { facilitatorOn, startNetworksSeller } from "../helpers/sellerNetworks";
import { randomOwner, stackPerFile, type RemoteStack } from "../helpers/stack";
import { agentHeaders, callTool, mcpClient } from "../mcp/client";

const USDC = 1_000_000n;
const PRICE = USDC / 100n; // 0.01

describe("two networks in one service: an agent on each, paid on its own chain", function () {
  const { s, keep } = stackPerFile({ NETWORKS: "base,base-sepolia" });
  const owner = randomOwner();
  let base: RunningNetwork;
  let sepolia: RunningNetwork;
  const agents: Record<string, { agentAddress: string; apiKey: string }> = {};

  const balanceOn = (n: RunningNetwork, address: string): Promise<bigint> =>
    new Contract(n.config.usdcAddress, ["function balanceOf(address) view returns (uint256)"], n.chain.provider).balanceOf(address);
  const pay = (network: string, serviceUrl: string) =>
    s.api("POST", "/pay", {
      key: agents[network].apiKey,
      body: { agentAddress: agents[network].agentAddress, serviceUrl, maxAmount: "1", intent: `paid on ${network}` },
    });

  before(async function () {
    [base, sepolia] = s.svc.networks;
    for (const network of ["base", "base-sepolia"]) {
      const on: RemoteStack = s.on(network);
      const a = await on.onboard(owner, { allowlist: ["127.0.0.1"], perTxLimit: "1", dailyBudget: "10", approvalThreshold: "1" });
      // The faucet gives on the agent's network.
      const funded = await s.api("POST", "/dev/faucet", { body: { agentAddress: a.agentAddress, amount: "5" } });
      expect(funded.status, JSON.stringify(funded.body)).to.equal(200);
      agents[network] = a;
    }
  });

  it("puts each agent on the network chosen at genesis: its contract is on that chain only, and every view names it", async function () {
    expect([base.name, sepolia.name, sepolia.config.chainId]).to.deep.equal(["base", "base-sepolia", 84532]);
    const { agentAddress } = agents["base-sepolia"];
    expect(await sepolia.chain.isDeployed(agentAddress)).to.equal(true);
    expect(await base.chain.isDeployed(agentAddress)).to.equal(false);
    expect(await balanceOn(sepolia, agentAddress)).to.equal(5n * USDC);
    expect(await balanceOn(base, agentAddress)).to.equal(0n);

    const key = await ownerKey(s, owner);
    const listed = await s.api("GET", "/wallet/agents", { key });
    expect(listed.body.agents.map((a: { network: string; chainId: number }) => [a.network, a.chainId]).sort()).to.deep.equal([
      ["base", 8453],
      ["base-sepolia", 84532],
    ]);
    const limits = await s.api("GET", "/limits", { key });
    expect(limits.body.agents.map((a: { network: string; deployed: boolean }) => [a.network, a.deployed]).sort()).to.deep.equal([
      ["base", true],
      ["base-sepolia", true],
    ]);
    const balance = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key });
    expect(balance.body).to.include({ network: "base-sepolia", chainId: 84532, usdc: "5", weth: "0.0" });
    // An owner signs in on either chain.
    expect((await siweVerify(s, owner, { chainId: 84532 })).status).to.equal(200);
    expect((await siweVerify(s, owner, { chainId: 1 })).status).to.equal(401);
  });

  it("has one factory address on both chains, and an owner-bound agent has one address on both (CREATE2 through the deterministic deployer)", async function () {
    expect(base.config.factoryAddress).to.equal(sepolia.config.factoryAddress);
    expect(await base.chain.factory.implementation()).to.equal(await sepolia.chain.factory.implementation());
    const signer = Wallet.createRandom().address;
    const [onBase, onSepolia] = await Promise.all([base, sepolia].map((n) => n.chain.factory.predictAgent(signer, owner.address)));
    expect(onBase).to.equal(onSepolia);
    // Chain-specific facts stay each chain's: its USDC, and the domain its owner signs for.
    expect(base.config.usdcAddress).to.not.equal(sepolia.config.usdcAddress);
  });

  it("a stock seller offering only eip155:84532 is paid by the Base Sepolia agent, on Base Sepolia", async function () {
    const seller = keep(await startNetworksSeller([{ network: "base-sepolia", facilitator: await facilitatorOn(sepolia) }], PRICE));
    const res = await pay("base-sepolia", seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ status: "approved", amount: "0.01" });
    expect(seller.paidOn).to.deep.equal(["eip155:84532"]);
    expect(await balanceOn(sepolia, seller.payTo)).to.equal(PRICE);
    const entry = await s.api("GET", `/ledger/${res.body.transactionId}`, { key: agents["base-sepolia"].apiKey });
    expect(entry.body).to.include({ network: "base-sepolia", chainId: 84532, status: "approved" });
  });

  it("a stock seller offering both networks is paid on each agent's own network", async function () {
    const seller = keep(
      await startNetworksSeller(
        [
          { network: "base", facilitator: await facilitatorOn(base) },
          { network: "base-sepolia", facilitator: await facilitatorOn(sepolia) },
        ],
        PRICE,
      ),
    );
    for (const network of ["base-sepolia", "base"]) {
      const res = await pay(network, seller.resource);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
    expect(seller.paidOn).to.deep.equal(["eip155:84532", "eip155:8453"]);
    expect([await balanceOn(base, seller.payTo), await balanceOn(sepolia, seller.payTo)]).to.deep.equal([PRICE, PRICE]);
  });

  it("a stock seller offering only another network is refused with the reason, and nothing is signed, sent or moved", async function () {
    const seller = keep(await startNetworksSeller([{ network: "base", facilitator: await facilitatorOn(base) }], PRICE));
    const { agentAddress } = agents["base-sepolia"];
    const before = await balanceOn(sepolia, agentAddress);
    const res = await pay("base-sepolia", seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body).to.include({ status: "blocked", reason: "unsupported_payment", onchainEvent: null });
    expect(res.body.message).to.include("base-sepolia (eip155:84532)").and.include("eip155:8453");
    expect(seller.hits.paid).to.equal(0);
    expect(seller.settlements).to.deep.equal([]);
    expect(await balanceOn(sepolia, agentAddress)).to.equal(before);
    const entry = await s.api("GET", `/ledger/${res.body.transactionId}`, { key: agents["base-sepolia"].apiKey });
    expect(entry.body).to.include({ network: "base-sepolia", status: "blocked", reason: "unsupported_payment" });
  });

  it("sells on both networks itself: one requirement each, with that network's USDC and EIP-712 domain, paid by each agent", async function () {
    const unpaid = await fetch(`${s.url}/sell/agent-intel`);
    const offered = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") ?? "").accepts;
    expect(offered.map((r) => [r.network, r.asset, r.extra])).to.deep.equal([
      ["eip155:8453", base.config.usdcAddress, { name: "USD Coin", version: "2" }],
      ["eip155:84532", sepolia.config.usdcAddress, { name: "USDC", version: "2" }],
    ]);
    for (const network of ["base", "base-sepolia"]) {
      const res = await pay(network, `${s.url}/sell/agent-intel`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.response.body.payment).to.include({ network, status: "settled" });
    }
  });

  it("MCP: the agent's tools read and pay on its network (get_limits, get_balance, list_transactions, pay)", async function () {
    const a = agents["base-sepolia"];
    const client = await mcpClient(s.url, agentHeaders(a));
    try {
      expect((await callTool(client, "get_limits")).structuredContent).to.include({ network: "base-sepolia", deployed: true });
      expect((await callTool(client, "get_balance")).structuredContent).to.include({ network: "base-sepolia", chainId: 84532 });
      const paid = await callTool(client, "pay", { serviceUrl: `${s.url}/sell/agent-intel`, maxAmount: "0.05", intent: "over MCP" });
      expect(paid.isError, JSON.stringify(paid.structuredContent)).to.not.equal(true);
      expect(paid.structuredContent.response.body.payment).to.include({ network: "base-sepolia" });
      const listed = (await callTool(client, "list_transactions", { limit: 50 })).structuredContent as {
        transactions: { network: string }[];
      };
      expect(new Set(listed.transactions.map((t) => t.network))).to.deep.equal(new Set(["base-sepolia"]));
    } finally {
      await client.close();
    }
  });

  it("recovers an interrupted payment on its own network's chain only: the other network's recovery leaves it alone", async function () {
    const a = agents["base-sepolia"];
    const txnId = `txn_${randomBytes(12).toString("hex")}`;
    const base_ = { agentAddress: a.agentAddress, network: "base-sepolia", ownerAddress: owner.address, policyAddress: a.agentAddress };
    await s.svc.store.payments.insertOne(
      ledgerEntry(
        txnId,
        { ...base_, merchant: "127.0.0.1", serviceUrl: "http://127.0.0.1/x", currency: "USDC", intent: "interrupted", approvalId: null },
        {
          amount: "10000",
          status: "processing",
          phase: "authorizing",
          paymentId: `0x${randomBytes(32).toString("hex")}`,
          payTo: owner.address,
          validAfter: 0,
          validBefore: Math.floor(Date.now() / 1000) + 300,
          // Its instance is gone: its lease ran out.
          leaseUntil: new Date(0),
          instanceId: "an-instance-that-stopped",
        },
      ),
    );
    await base.services.payments.recover();
    expect(await s.svc.store.payments.findOne({ txnId })).to.include({ phase: "authorizing", instanceId: "an-instance-that-stopped" });
    await sepolia.services.payments.recover();
    const done = await s.svc.store.payments.findOne({ txnId });
    expect(done).to.include({ phase: "done", status: "failed", reason: "not_authorized" });
    // Voided on Base Sepolia's chain, where the agent's policy is.
    expect(await sepolia.chain.provider.getTransactionReceipt(done!.voidTxHash!)).to.not.equal(null);
    expect(await base.chain.provider.getTransactionReceipt(done!.voidTxHash!)).to.equal(null);
  });

  it("has the audit of each chain agree with the chain's events and with that network's ledger entries", async function () {
    const key = await ownerKey(s, owner);
    const ledger = await s.api("GET", "/ledger?limit=200", { key });
    const networksOf = new Set(ledger.body.transactions.map((t: { network: string }) => t.network));
    expect([...networksOf].sort()).to.deep.equal(["base", "base-sepolia"]);
    for (const n of [base, sepolia]) {
      const run = await runScript([
        "scripts/audit.ts",
        "--network",
        n.name,
        "--rpc",
        n.config.rpcUrl,
        "--factory",
        n.config.factoryAddress,
        "--from-block",
        String(n.config.factoryDeployBlock),
        "--ledger",
        s.url,
        "--key",
        key,
      ]);
      expect(run.code, run.stderr + run.stdout.slice(-2000)).to.equal(0);
      const { report, summary } = auditOutput(run.stdout);
      expect(report.inconsistencies).to.deep.equal([]);
      expect(report.ledgerDisagreements).to.deep.equal([]);
      expect(Object.keys(report.agents)).to.deep.equal([agents[n.name].agentAddress]);
      expect(summary).to.match(/^audit: 1 agents, \d+ events, 0 anomalies/);
    }
  });
});
