/**
 * Every USDC and WETH Transfer out of an agent wallet against what explains it (an authorised settlement, an owner's
 * withdrawal, a swap before settlement). Tokens moved out by impersonating the wallet on the dev chain are explained by
 * none: the audit names each transfer and `npm run audit` exits 1. (Its own stack: the anomalies stay on this chain.)
 */
import { expect } from "chai";
import { Contract, JsonRpcProvider, JsonRpcSigner, Wallet, getAddress } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../../src/chain/addresses";
import { poolAddress } from "../../src/chain/uniswapMath";
import { auditOutput, auditStack, runAudit } from "../helpers/auditCli";
import { fundedFacilitator, mintUsdc, startV2Seller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";

const USDC = 1_000_000n;

describe("audit: every outflow of a wallet explained", () => {
  const { s, keep } = stackPerFile();

  it("a swap before settlement: its WETH to the pool is explained by SwapExecuted, the USDC by the settlement", async () => {
    const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 2n * USDC });
    keep(seller);
    const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"], maxSwapSlippageBps: 100, swapTwapSeconds: 600 });
    const faucet = await s.api("POST", "/dev/faucet", { body: { agentAddress: a.agentAddress, token: "WETH", amount: "1" } });
    expect(faucet.status, JSON.stringify(faucet.body)).to.equal(200);
    const paid = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: "paid with WETH" },
    });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body.swap, JSON.stringify(paid.body)).to.be.an("object");

    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal([]);
    const audited = report.agents[a.agentAddress];
    const [payment] = audited.payments;
    const pool = poolAddress(s.svc.embeddedChain!.addresses.uniswap!.factory, WETH_ADDRESS, s.svc.config.usdcAddress, UNISWAP_POOL_FEE);
    expect(audited.outflows.map((o) => [o.token, o.to, o.amount, o.explainedBy, o.paymentId])).to.deep.equal([
      ["WETH", pool, payment.swap!.amountIn, "swap", payment.paymentId],
      ["USDC", getAddress(seller.payTo), "2000000", "settlement", payment.paymentId],
    ]);
  });

  it("USDC and WETH moved out of a wallet by impersonating it (dev chain): anomalies naming each transfer, exit 1", async () => {
    const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    keep(seller);
    const a = await s.onboard(randomOwner(), { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "5", allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const paid = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent: "a real payment" },
    });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect((await auditStack(s)).inconsistencies).to.deep.equal([]);

    // What no policy allows: the wallet's own key, as only a dev chain can lend it.
    const thief = getAddress(Wallet.createRandom().address);
    const rpc = new JsonRpcProvider(s.svc.config.rpcUrl);
    let usdcTx: string;
    let wethTx: string;
    try {
      await rpc.send("hardhat_impersonateAccount", [a.agentAddress]);
      await rpc.send("hardhat_setBalance", [a.agentAddress, "0xde0b6b3a7640000"]);
      const wallet = new JsonRpcSigner(rpc, a.agentAddress);
      const usdc = new Contract(s.svc.config.usdcAddress, ["function transfer(address,uint256) returns (bool)"], wallet);
      usdcTx = (await (await usdc.transfer(thief, 2_500_000n)).wait())!.hash;
      const weth = new Contract(WETH_ADDRESS, ["function deposit() payable", "function transfer(address,uint256) returns (bool)"], wallet);
      await (await weth.deposit({ value: 10n ** 17n })).wait();
      wethTx = (await (await weth.transfer(thief, 5n * 10n ** 16n)).wait())!.hash;
      await rpc.send("hardhat_stopImpersonatingAccount", [a.agentAddress]);
    } finally {
      rpc.destroy();
    }

    const expected = [
      `2500000 USDC (${getAddress(s.svc.config.usdcAddress)}) left ${a.agentAddress} to ${thief} in ${usdcTx}: no authorised settlement, withdrawal or swap explains it`,
      `50000000000000000 WETH (${getAddress(WETH_ADDRESS)}) left ${a.agentAddress} to ${thief} in ${wethTx}: no authorised settlement, withdrawal or swap explains it`,
    ];
    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal(expected);
    expect(report.agents[a.agentAddress].outflows.map((o) => [o.token, o.to, o.amount, o.explainedBy])).to.deep.equal([
      ["USDC", getAddress(seller.payTo), "1000000", "settlement"],
      ["USDC", thief, "2500000", null],
      ["WETH", thief, "50000000000000000", null],
    ]);

    // `npm run audit`, as an auditor runs it: the same anomalies, exit 1, and the summary says so.
    const cli = await runAudit(s);
    expect(cli.code, cli.stderr).to.equal(1);
    const { report: printed, summary } = auditOutput(cli.stdout);
    expect(printed.inconsistencies).to.deep.equal(expected);
    expect(summary).to.match(/^audit: \d+ agents, \d+ events, 2 anomalies$/);
  });
});
