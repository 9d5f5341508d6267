/**
 * The dashboard on a phone and a desktop (Chromium at 390×844 and 1280×800): the approvals, agents, ledger and
 * policy pages never scroll sideways, their cards hold what is in them (the approvals table fits its card; on a phone
 * each request is a card), and Approve and Deny are on screen, large enough for a thumb. Screenshots of each page at
 * both widths go to test-output/screenshots/ (not committed). Also what the owner reads there: the ledger chart scaled
 * to what was spent, and a blocked payment's amount named for what it is (the seller's price, or the caller's maxAmount).
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { stackSeller, mintUsdc, type TestSeller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

const USDC = 1_000_000n;
const VIEWPORTS = [
  { width: 390, height: 844 },
  { width: 1280, height: 800 },
];

/** Nothing wider than the screen, and no card (or scrolling box inside one) holding more than its width. */
async function overflow(page: Page) {
  return page.evaluate(() => ({
    page: document.scrollingElement!.scrollWidth,
    view: window.innerWidth,
    boxes: Array.from(document.querySelectorAll<HTMLElement>(".card, .table-scroll, pre"))
      .filter((el) => el.scrollWidth > el.clientWidth + 1 && !(el.tagName === "PRE" && getComputedStyle(el).overflowX === "auto"))
      .map((el) => `${el.tagName}.${el.className}#${el.id}: ${el.scrollWidth} > ${el.clientWidth}`),
  }));
}

/**
 * The whole page as a screen as tall as it would show it: the viewport grown to the page's height (a full-page capture
 * of a short viewport would draw the sticky Approve and Deny where the short screen holds them), then put back.
 */
async function screenshotWhole(page: Page, name: string): Promise<void> {
  const viewport = page.viewportSize()!;
  const height = await page.evaluate(() => document.scrollingElement!.scrollHeight);
  await page.setViewportSize({ width: viewport.width, height: Math.max(height, viewport.height) });
  await screenshot(page, name);
  await page.setViewportSize(viewport);
}

describe("dashboard in Chromium at 390×844 and 1280×800: no sideways scroll, Approve and Deny within reach", () => {
  const { s, keep } = stackPerFile();
  let seller: TestSeller;
  let cheap: TestSeller;
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let agent: { agentAddress: string; apiKey: string };
  let pending: string;

  const pay = (serviceUrl: string, maxAmount: string, intent: string) =>
    s.api("POST", "/pay", { key: agent.apiKey, body: { agentAddress: agent.agentAddress, serviceUrl, maxAmount, intent } });

  before(async () => {
    seller = await stackSeller(s, 1n * USDC);
    cheap = await stackSeller(s, 10_000n);
    browser = await launchBrowser();
    page = await browser.newPage();
    wallet = new TestWallet(randomOwner());
    await installWallets(page, [wallet], 0);
    agent = await s.onboard(wallet.signer, { allowlist: ["127.0.0.1"], approvalThreshold: "0.5", dailyBudget: "10", perTxLimit: "5" });
    await mintUsdc(s, agent.agentAddress, 10n * USDC);
    keep(browser, seller, cheap);

    // 0.01 USDC spent against a 10 USDC budget; a refusal before any quote, one after; two requests waiting.
    expect((await pay(cheap.resource, "1", "a cheap lookup")).status).to.equal(200);
    const unquoted = await pay(`http://localhost:${new URL(seller.url).port}/resource`, "3", "a merchant off the allowlist");
    expect(unquoted.body).to.include({ status: "blocked", reason: "merchant_not_allowed" });
    const quoted = await pay(seller.resource, "0.5", "a price above my ceiling");
    expect(quoted.body).to.include({ status: "blocked", reason: "max_amount_exceeded", amount: "1" });
    const long = "summarise the quarterly filings of every listed company in the sector ".repeat(3).trim();
    const first = await pay(seller.resource, "2", long);
    expect(first.status, JSON.stringify(first.body)).to.equal(202);
    pending = first.body.approvalId;
    expect((await pay(seller.resource, "2", "a second request")).status).to.equal(202);

    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-responsive-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  const PAGES = () => [
    { name: "approvals", path: "/approvals", ready: `[data-approval="${pending}"] [data-action=approve]` },
    { name: "agents", path: "/agents", ready: `[data-agent="${agent.agentAddress}"]` },
    { name: "ledger", path: "/ledger", ready: "#spend-chart" },
    { name: "policy", path: `/policy?agent=${agent.agentAddress}`, ready: "#policy-form" },
  ];

  for (const { width, height } of VIEWPORTS) {
    it(`at ${width}×${height}: the approvals, agents, ledger and policy pages fit the screen; screenshots of each`, async () => {
      await page.setViewportSize({ width, height });
      for (const p of PAGES()) {
        await page.goto(`${s.url}${p.path}`);
        await page.locator(p.ready).waitFor();
        await page.waitForLoadState("networkidle");
        const o = await overflow(page);
        expect(o.page, `${p.name} at ${width}: the page is wider than the screen`).to.be.at.most(o.view);
        expect(o.boxes, `${p.name} at ${width}: content wider than its card`).to.deep.equal([]);
        await screenshotWhole(page, `${p.name}-${width}`);
      }
    });

    it(`at ${width}×${height}: Approve and Deny of the first request are on screen without scrolling, thumb-sized`, async () => {
      await page.setViewportSize({ width, height });
      await page.goto(`${s.url}/approvals`);
      const row = page.locator(`[data-approval="${pending}"]`);
      await row.locator("[data-action=approve]").waitFor();
      for (const action of ["approve", "deny"]) {
        const box = (await row.locator(`[data-action=${action}]`).boundingBox())!;
        expect(box.x, action).to.be.at.least(0);
        expect(box.y, action).to.be.at.least(0);
        expect(box.x + box.width, `${action}'s right edge`).to.be.at.most(width);
        expect(box.y + box.height, `${action}'s bottom edge`).to.be.at.most(height);
        // WCAG 2.5.5's target size on a phone; a desktop keeps its compact buttons.
        if (width < 600) expect(box.height, `${action}'s height`).to.be.at.least(44);
      }
      // The table fits its card at a desktop width; a phone shows each request as a card of its own.
      const fits = await page.evaluate(() => {
        const card = document.querySelector("#approvals-table")!.closest(".card")!.getBoundingClientRect();
        const table = document.querySelector("#approvals-table")!.getBoundingClientRect();
        return {
          card: card.right,
          table: table.right,
          display: getComputedStyle(document.querySelector("#approvals-table tbody tr")!).display,
        };
      });
      expect(fits.table, "the table's right edge against its card's").to.be.at.most(fits.card);
      expect(fits.display, "a request's row").to.equal(width < 600 ? "grid" : "table-row");
    });
  }

  it("the ledger chart scales to what was spent: a day of 0.01 USDC under a 10 USDC budget is a visible bar", async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${s.url}/ledger`);
    await page.locator("#spend-chart").waitFor();
    const today = new Date().toISOString().slice(0, 10);
    const bar = (await page.locator(`#spend-chart rect.bar[data-day="${today}"]`).boundingBox())!;
    const plot = (await page.locator("#spend-chart").boundingBox())!;
    expect(bar.height, "today's bar").to.be.above(plot.height / 3);
    // The budget is far above the scale: said, not drawn off the chart.
    expect(await page.locator("#spend-chart .budget-label").textContent())
      .to.include("budget 10")
      .and.include("above");
    expect(await page.locator("#chart-desc").textContent()).to.include("Budget 10 USDC per day");
  });

  it("a blocked payment shows the seller's price where it was quoted, else the caller's maxAmount labelled as such", async () => {
    const ledger = (await s.api("GET", `/ledger?address=${agent.agentAddress}&status=blocked`, { key: agent.apiKey })).body;
    const unquoted = ledger.transactions.find((t: { reason: string }) => t.reason === "merchant_not_allowed");
    const quoted = ledger.transactions.find((t: { reason: string }) => t.reason === "max_amount_exceeded");
    expect(unquoted).to.include({ amount: "3", amountIs: "maxAmount" });
    expect(quoted).to.include({ amount: "1", amountIs: "price" });

    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${s.url}/ledger?status=blocked`);
    await page.locator(`[data-id="${unquoted.id}"]`).waitFor();
    expect(await page.locator(`[data-id="${unquoted.id}"] [data-field=amount]`).textContent()).to.equal(
      "3.00 USDC the agent's maxAmount (no price from the seller)",
    );
    expect(await page.locator(`[data-id="${quoted.id}"] [data-field=amount]`).textContent()).to.equal("1.00 USDC the seller's price");
  });
});
