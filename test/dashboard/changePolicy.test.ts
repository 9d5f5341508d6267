/**
 * The signed-in owner changes a policy from the dashboard's own links (Chromium): Agents -> "Edit the policy of X" opens
 * the Edit policy page (/policy?agent=<addr>: the agent and the form, no activation steps); "Set the spend policy of
 * X" and the Overview's link open /onboarding?agent=<addr> without the activation code, where the page reads the
 * agent with the owner's key, so its owner sees the form, signs, and GET /limits shows it.
 * Also the page shell's layout at a desktop and a phone width.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

describe("dashboard in Chromium: the signed-in owner sets and changes policies from the Agents and Overview links", () => {
  const { s, keep } = stackPerFile();
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let live: { agentAddress: string; apiKey: string; policyContract: string };
  let fresh: { agentAddress: string; apiKey: string };

  before(async () => {
    browser = await launchBrowser();
    page = await browser.newPage();
    // A long wallet name, as real wallets have: the header must still fit on one line at 1280 px.
    wallet = new TestWallet(randomOwner(), "Coinbase Wallet Browser Extension", "com.example.long-wallet-name");
    await installWallets(page, [wallet], 0);
    live = await s.onboard(wallet.signer, { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "2" });
    // Linked to the owner, no policy yet.
    fresh = await s.genesis({ label: "fresh-bot" });
    const link = await s.api("POST", "/agents/link", { body: await s.signLink(wallet.signer, fresh.agentAddress) });
    expect(link.status, JSON.stringify(link.body)).to.equal(200);
    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    keep(browser);
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-change-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  const label = async (agent: string) => (await s.svc.store.agents.findOne({ address: agent }))!.label;

  it("Agents -> Edit the policy: a page of its own with no activation steps, signed and updated on-chain", async () => {
    const faucet = await s.api("POST", "/dev/faucet", { body: { agentAddress: live.agentAddress, token: "ETH", amount: "2" } });
    expect(faucet.status, JSON.stringify(faucet.body)).to.equal(200);
    await page.goto(`${s.url}/agents`);
    const name = await label(live.agentAddress);
    // One number format on the page: "2.00 ETH" beside "0.00 USDC", not the API's "2.0".
    await page.getByText("0.00 USDC · 2.00 ETH").waitFor();
    await page.getByRole("link", { name: `Edit the policy of ${name}` }).click();
    await page.waitForURL((u) => u.pathname === "/policy");
    expect(await page.title()).to.equal("Edit policy · SpendGate");
    await page.locator("#policy-in-force").waitFor();
    // No activation: no steps, no sign-in or link to do again.
    expect(await page.locator(".step").count()).to.equal(0);
    expect(await page.locator("#policy-in-force").textContent())
      .to.include(name)
      .and.include("5.00 USDC per payment");

    const perTx = page.locator("#policy-perTxLimit");
    expect(await perTx.inputValue()).to.match(/^5(\.0+)?$/);
    await perTx.fill("3.25");
    await page.locator("#policy-dailyBudget").fill("12");
    await page.locator("#policy-review-button").click();
    await page.locator("#policy-sign").click();
    await page.locator("#policy-result [data-state=deployed]").waitFor();
    // The policy in force is read back after the transaction.
    await page.locator("#policy-in-force", { hasText: "3.25 USDC per payment, 12.00 USDC a day" }).waitFor();
    expect(wallet.typedSigned.at(-1)?.primaryType).to.equal("SetPolicy");
    // The result is what has focus (in view), not the end of the long form.
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("policy-result");

    const limits = await s.api("GET", `/limits?address=${live.agentAddress}`, { key: live.apiKey });
    expect(limits.status).to.equal(200);
    expect(limits.body.agents[0]).to.include({ deployed: true, perTxLimit: "3.25", dailyBudget: "12" });
  });

  it("Agents -> Set the spend policy: a linked agent without a policy deploys; step 1 then says deployed", async () => {
    await page.goto(`${s.url}/agents`);
    await page.getByRole("link", { name: "Set the spend policy of fresh-bot" }).click();
    await page.locator("[data-state=linked]").waitFor();
    expect(await page.locator("#agent-step").textContent()).to.include("not deployed yet");
    await page.locator("#policy-review-button").click();
    await page.locator("#policy-sign").click();
    await page.locator("#policy-result [data-state=deployed]").waitFor();
    // Step 1 is drawn again once the page has read the deployed policy back (GET /limits after the transaction).
    await page.locator("#agent-step", { hasText: "(deployed)" }).waitFor();
    expect(await page.locator("#agent-step").textContent()).to.not.include("not deployed yet");
    const limits = await s.api("GET", `/limits?address=${fresh.agentAddress}`, { key: fresh.apiKey });
    expect(limits.body.agents[0]).to.include({ deployed: true });
  });

  it("the Overview's link opens the same page for the owner; a visitor without a session sees no owner", async () => {
    const other = await s.genesis({ label: "overview-bot" });
    const link = await s.api("POST", "/agents/link", { body: await s.signLink(wallet.signer, other.agentAddress) });
    expect(link.status).to.equal(200);
    await page.goto(`${s.url}/`);
    await page.getByRole("listitem").filter({ hasText: "overview-bot" }).getByRole("link", { name: "set its spend policy" }).click();
    await page.locator("[data-state=linked]").waitFor();

    const visitor = await browser.newPage();
    await visitor.goto(`${s.url}/onboarding?agent=${other.agentAddress}`);
    await visitor.locator("#agent-step").getByText("overview-bot").waitFor();
    expect(await visitor.locator("#agent-step").textContent()).to.include("not linked yet");
    expect(visitor.errors).to.deep.equal([]);
    await visitor.close();
  });

  it("keeps the header on one line at 1280 px and the navigation inside a 390 px screen; no favicon request fails", async () => {
    const failed: string[] = [];
    page.on("response", (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${s.url}/agents`);
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    const header = await page.locator(".site-header").boundingBox();
    const brand = await page.locator(".brand").boundingBox();
    expect(header!.height, "header height at 1280 px").to.be.below(brand!.height * 2 + 24);

    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${s.url}/agents`);
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    const overflow = await page.evaluate(() => ({
      doc: document.documentElement.scrollWidth,
      view: window.innerWidth,
      nav: Math.max(...Array.from(document.querySelectorAll(".site-header nav a"), (a) => a.getBoundingClientRect().right)),
    }));
    expect(overflow.doc, "page wider than the screen").to.be.at.most(overflow.view);
    expect(overflow.nav, "a nav link past the screen's edge").to.be.at.most(overflow.view);
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(failed).to.deep.equal([]);
  });
});
