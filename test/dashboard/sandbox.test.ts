/**
 * The sandbox in a browser with no wallet installed (Chromium): the owner opts in to the sandbox wallet (a key made and
 * kept in the tab), signs in, links and activates an agent, funds it with the Fund button (the dev faucet), and follows
 * explorer links to pages that show the decoded SpendGate events. Told that the service is not a sandbox (GET
 * /dashboard/config mode "production"), the page offers no sandbox wallet and deletes a sandbox key left in the tab.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { usdcBalance } from "../helpers/sellers";
import { stackPerFile } from "../helpers/stack";
import { launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";

const KEY = "spendgate.sandboxKey";

describe("dashboard sandbox in Chromium: a sandbox wallet without MetaMask, Fund, and the explorer's pages", () => {
  const { s, keep } = stackPerFile();
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let owner: string;

  before(async () => {
    browser = await launchBrowser();
    page = await browser.newPage();
    keep(browser);
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-sandbox-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  it("offers the sandbox wallet only when asked: no key exists before the owner chooses it, then she is signed in with it", async () => {
    await page.goto(`${s.url}/`);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("button", { name: "Use a sandbox wallet", exact: true }).waitFor();
    await screenshot(page, "sandbox-sign-in-390");
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY)).to.equal(null);
    // With no browser wallet, "Connect wallet" says so and offers the sandbox's key rather than choosing it.
    await page.locator("#sign-in").click();
    const problem = page.locator("#alerts .problem");
    await problem.waitFor();
    expect(await problem.textContent())
      .to.include("No wallet found")
      .and.include("never send it real funds");
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY)).to.equal(null);

    await problem.getByRole("button", { name: "Use a sandbox wallet instead" }).click();
    owner = (await page.locator("[data-owner]").getAttribute("data-owner"))!;
    expect(owner).to.match(/^0x[0-9a-fA-F]{40}$/);
    expect(await page.locator("#sandbox-key").textContent()).to.equal("Sandbox key: test money only");
    expect(await page.locator(".who").textContent()).to.include("Sandbox wallet (a test key kept in this tab)");
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY)).to.match(/^0x[0-9a-f]{64}$/);
  });

  it("links and activates an agent with the sandbox key, funds it with Fund, and opens the explorer's decoded pages", async () => {
    const agent = await s.genesis({ label: "sandbox-bot" });
    await page.goto(`${s.url}${s.activationPath(agent.agentAddress)}`);
    await page.locator("#link-agent").click();
    await page.locator("[data-state=linked]").waitFor();
    await page.locator("#policy-review-button").click();
    await page.locator("#policy-sign").click();
    await page.locator("#policy-result [data-state=deployed]").waitFor();
    const stored = await s.svc.store.agents.findOne({ address: agent.agentAddress });
    expect(stored?.ownerAddress).to.equal(owner);

    // The policy's transaction on the sandbox explorer: a page with the decoded PolicyUpdated, not JSON.
    const [policyTab] = await Promise.all([page.context().waitForEvent("page"), page.locator("#policy-result a.explorer").nth(1).click()]);
    await policyTab.waitForLoadState();
    expect(await policyTab.title()).to.match(/^Transaction 0x[0-9a-f]{8}… · SpendGate sandbox explorer$/);
    const updated = policyTab.locator('[data-event="PolicyUpdated"]');
    expect(await updated.textContent())
      .to.include("SpendPolicy at")
      .and.include("perTxLimit")
      .and.include("(1 USDC)")
      .and.include("dailyBudget");
    await screenshot(policyTab, "explorer-tx-1280");
    await policyTab.close();

    await page.goto(`${s.url}/agents`);
    const card = page.locator(`[data-agent="${agent.agentAddress}"]`);
    await page.locator(`#fund-${agent.agentAddress}-amount`).fill("7.5");
    await card.getByRole("button", { name: "Fund sandbox-bot" }).click();
    await page.locator("#alerts .notice", { hasText: "Gave sandbox-bot 7.5 USDC from the sandbox faucet" }).waitFor();
    await card.getByText("7.50 USDC ·").waitFor();
    expect(await usdcBalance(s, agent.agentAddress)).to.equal(7_500_000n);

    const [fundTab] = await Promise.all([page.context().waitForEvent("page"), page.locator("#alerts .notice a.explorer").click()]);
    await fundTab.waitForLoadState();
    expect(await fundTab.locator('[data-event="Transfer"]').textContent())
      .to.include("USDC at")
      .and.include("(7.5 USDC)")
      .and.include(agent.agentAddress);
    // Its addresses link to their own pages, on the same sandbox chain.
    await fundTab.locator(`[data-event="Transfer"] a[href^="/dev/explorer/address/${agent.agentAddress}"]`).click();
    await fundTab.locator("#address-title").waitFor();
    expect(await fundTab.locator("main").textContent())
      .to.include("7.5 USDC")
      .and.include("a contract");
    await fundTab.close();
  });

  it("the explorer's pages have no script, answer JSON to tools, and say what was not found", async () => {
    const html = { Accept: "text/html,application/xhtml+xml,*/*;q=0.8" };
    const missing = await fetch(`${s.url}/dev/explorer/tx/0x${"ab".repeat(32)}`, { headers: html });
    expect(missing.status).to.equal(404);
    expect(missing.headers.get("content-security-policy")).to.include("default-src 'none'").and.not.include("script-src");
    const text = await missing.text();
    expect(text).to.include("No transaction 0xabab").and.not.include("<script");
    const json = await s.api("GET", `/dev/explorer/tx/0x${"ab".repeat(32)}`);
    expect(json.body).to.include({ error: "not_found", status: 404 });
    const bad = await fetch(`${s.url}/dev/explorer/address/0x${"12".repeat(20)}?network=solana`, { headers: html });
    expect(bad.status).to.equal(400);
  });

  it("outside a sandbox (mode production) offers no sandbox wallet and ends what a sandbox key left in the tab", async () => {
    await page.route("**/dashboard/config", async (route) => {
      const res = await route.fetch();
      await route.fulfill({ response: res, json: { ...(await res.json()), mode: "production" } });
    });
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY)).to.match(/^0x/);
    await page.goto(`${s.url}/`);
    await page.locator("#page .loading").waitFor({ state: "detached" });
    await page.waitForLoadState("networkidle");
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY)).to.equal(null);
    expect(await page.locator("button.sandbox-sign-in").count()).to.equal(0);
    // The session its key signed in is ended too: the owner signs in again with a real wallet.
    expect(await page.evaluate(() => sessionStorage.getItem("spendgate.owner"))).to.equal(null);
    expect(await page.locator("#sign-in").count()).to.equal(1);
    expect(await page.locator("#sandbox-key").count()).to.equal(0);
    await page.unroute("**/dashboard/config");
  });
});
