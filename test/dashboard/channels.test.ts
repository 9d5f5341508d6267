/**
 * Channels in the dashboard (Chromium), with a REAL stock batch-settlement seller and facilitator (@x402/evm, over
 * HTTP): the agent pays through POST /pay, the owner sees what its channel holds beside today's spend, closes it with
 * "Close channel (refund)", and sees the refund credited back; the chain agrees. A seller that cannot refund leaves
 * the channel open and its message on the page. The ledger names each entry's scheme: a channel voucher with its
 * cumulative, an upto payment with what was settled of its ceiling.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import type { Page } from "playwright-core";
import { spentToday } from "../helpers/payments";
import { startBatchSeller, startUptoSeller, stockSchemeFacilitator, type StockFacilitator } from "../helpers/schemeSellers";
import { mintUsdc, usdcBalance } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { launchBrowser, screenshot, seriousA11yViolations, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

const USDC = 1_000_000n;
const PRICE = 1_000n; // 0.001 USDC a request; a deposit covers 10 requests

describe("dashboard channels in Chromium: held in channels, closing a channel for a refund, schemes in the ledger", () => {
  const { s, keep } = stackPerFile({ CHANNEL_DEPOSIT_REQUESTS: "10" });
  let facilitator: StockFacilitator;
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let agent: { agentAddress: string; apiKey: string; policyContract: string };

  const pay = async (url: string, maxAmount = "0.01") => {
    const res = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: url, maxAmount, intent: "per call" },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body;
  };
  const newBatchSeller = async () =>
    keep(await startBatchSeller({ facilitator: facilitator.client, usdc: s.svc.config.usdcAddress, price: PRICE }));

  before(async () => {
    const key = Wallet.createRandom();
    await s.svc.chain.provider.send("hardhat_setBalance", [key.address, `0x${(10n ** 21n).toString(16)}`]);
    facilitator = stockSchemeFacilitator(s.svc.config.rpcUrl, key.privateKey);
    browser = keep(await launchBrowser());
    page = await browser.newPage();
    wallet = new TestWallet(randomOwner());
    await installWallets(page, [wallet], 0);
    agent = await s.onboard(wallet.signer, { perTxLimit: "1", dailyBudget: "5", allowlist: ["127.0.0.1"], approvalThreshold: "2" });
    await mintUsdc(s, agent.agentAddress, 10n * USDC);
    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-channels-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  it("shows what a channel holds beside today's spend; Close channel (refund) refunds it, credits it back, and the chain agrees", async () => {
    const seller = await newBatchSeller();
    const paid = [await pay(seller.resource), await pay(seller.resource), await pay(seller.resource)];
    const channelId = paid[0].channel.channelId as string;
    expect(paid[2].channel.cumulative).to.equal("0.003");
    // One deposit of 10 requests, counted against the budget when authorised: 0.003 spent, 0.007 held.
    expect(await spentToday(s, agent.policyContract)).to.equal(10n * PRICE);

    await page.goto(`${s.url}/agents`);
    const card = page.locator(`[data-agent="${agent.agentAddress}"]`);
    const held = card.locator("[data-field=held-in-channels]");
    await held.waitFor();
    expect(await held.textContent()).to.equal("0.007 USDC");
    const row = card.locator(`tr[data-channel="${channelId}"]`);
    expect(await row.getAttribute("data-status")).to.equal("open");
    const cell = async (field: string) => (await row.locator(`[data-field=${field}]`).textContent())?.trim();
    expect(await cell("deposited")).to.equal("0.01 USDC");
    expect(await cell("charged")).to.equal("0.003 USDC");
    expect(await cell("held")).to.equal("0.007 USDC");
    expect(await cell("claimed")).to.equal("0.00 USDC");
    expect(await row.textContent()).to.include("127.0.0.1");
    expect(await seriousA11yViolations(page), "axe on /agents with a channel").to.deep.equal([]);

    // The request is held back until the button has been seen disabled: it stays disabled while the close runs.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    await page.route("**/channels/*/close", async (route) => {
      await gate;
      await route.continue();
    });
    const button = row.getByRole("button", { name: "Close channel (refund) with 127.0.0.1" });
    await button.click();
    const busy = row.locator("[data-action=close-channel]");
    expect(await busy.isDisabled()).to.equal(true);
    expect(await busy.getAttribute("aria-busy")).to.equal("true");
    expect(await busy.textContent()).to.include("Closing");
    release();

    const notice = page.locator("#alerts .notice[data-kind=success]");
    await notice.waitFor();
    expect(await notice.textContent()).to.include(
      "with 127.0.0.1: 0.007 USDC refunded to the wallet, 0.007 USDC credited back to the budgets.",
    );
    await page.unroute("**/channels/*/close");
    // The card was read again: nothing held, the channel closed with no button, spent today down by the refund.
    expect(await held.textContent()).to.equal("0.00 USDC");
    expect(await row.getAttribute("data-status")).to.equal("closed");
    expect(await row.locator("[data-action=close-channel]").count()).to.equal(0);
    expect(await card.locator(".spend [data-field=spent]").textContent()).to.include("0.003 USDC of 5.00 USDC");

    expect(await spentToday(s, agent.policyContract)).to.equal(3n * PRICE);
    expect(await usdcBalance(s, agent.agentAddress)).to.equal(10n * USDC - 3n * PRICE);
    const limits = await s.api("GET", `/limits?address=${agent.agentAddress}`, { key: agent.apiKey });
    expect(limits.body.agents[0].heldInChannels).to.equal("0");
  });

  it("a seller that cannot refund: the page shows the service's message, the button comes back, nothing changed", async () => {
    const seller = await newBatchSeller();
    const paid = await pay(seller.resource);
    const spent = await spentToday(s, agent.policyContract);
    await seller.close();

    await page.goto(`${s.url}/agents`);
    const row = page.locator(`tr[data-channel="${paid.channel.channelId}"]`);
    await row.waitFor();
    expect((await row.locator("[data-field=held]").textContent())?.trim()).to.equal("0.009 USDC");
    // On a phone the channels table scrolls inside its card; the page itself stays as wide as the screen.
    await page.setViewportSize({ width: 390, height: 800 });
    const width = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, view: window.innerWidth }));
    expect(width.doc, "page wider than a 390 px screen").to.be.at.most(width.view);
    await page.setViewportSize({ width: 1280, height: 900 });
    await row.getByRole("button", { name: /^Close channel \(refund\)/ }).click();
    const problem = page.locator("#alerts .problem[data-kind=api-upstream_error]");
    await problem.waitFor();
    expect(await problem.textContent())
      .to.include("Could not close the channel")
      .and.include("the channel still holds 0.009 USDC");
    const button = row.locator("[data-action=close-channel]");
    expect(await button.isEnabled()).to.equal(true);
    expect(await button.textContent()).to.equal("Close channel (refund) with 127.0.0.1");
    expect(await row.getAttribute("data-status")).to.equal("open");
    expect(await spentToday(s, agent.policyContract)).to.equal(spent);
  });

  it("the ledger names each entry's scheme: a channel voucher with its cumulative, upto with what it settled of its ceiling", async () => {
    const upto = keep(await startUptoSeller({ facilitator: facilitator.client, usdc: s.svc.config.usdcAddress, ceiling: 500_000n }));
    upto.setUsage(123_456n);
    const metered = await pay(upto.resource, "1");
    expect(metered).to.include({ scheme: "upto", amount: "0.123456", ceiling: "0.5" });
    const seller = await newBatchSeller();
    const first = await pay(seller.resource);
    const voucher = await pay(seller.resource);

    await page.goto(`${s.url}/ledger?agent=${agent.agentAddress}`);
    const entry = (id: string) => page.locator(`#ledger-table tbody tr[data-id="${id}"]`);
    await entry(voucher.transactionId).waitFor();
    const scheme = async (id: string) => ({
      name: await entry(id).locator("[data-field=scheme]").textContent(),
      detail: await entry(id).locator("[data-field=scheme-detail]").textContent(),
    });
    expect(await scheme(metered.transactionId)).to.deep.equal({
      name: "upto",
      detail: "settled 0.123456 USDC of ceiling 0.50 USDC",
    });
    const opened = await scheme(first.transactionId);
    expect(opened.name).to.equal("channel");
    expect(opened.detail).to.include("cumulative 0.001 USDC in channel").and.include("deposited 0.01 USDC first");
    expect(await seriousA11yViolations(page), "axe on /ledger with schemes").to.deep.equal([]);
    // On a phone the ledger's table scrolls inside its card; the page itself stays as wide as the screen.
    await page.setViewportSize({ width: 390, height: 800 });
    const width = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, view: window.innerWidth }));
    expect(width.doc, "ledger wider than a 390 px screen").to.be.at.most(width.view);
    await page.setViewportSize({ width: 1280, height: 900 });
    const paidFromIt = await scheme(voucher.transactionId);
    expect(paidFromIt.detail).to.include("cumulative 0.002 USDC").and.not.include("deposited");
    expect(await entry(voucher.transactionId).locator("[data-field=voucher]").textContent()).to.include("off-chain voucher");

    const api = await s.api("GET", `/ledger/${voucher.transactionId}`, { key: agent.apiKey });
    expect(api.status, JSON.stringify(api.body)).to.equal(200);
    expect(api.body).to.deep.include({
      scheme: "batch-settlement",
      ceiling: null,
      channel: { channelId: voucher.channel.channelId, cumulative: "0.002", deposit: null, depositPaymentId: null },
    });
  });
});
