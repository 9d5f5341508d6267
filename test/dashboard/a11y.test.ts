/**
 * Accessibility in Chromium: axe-core (WCAG 2.1/2.2 A and AA, best practices) finds no serious or critical problem on
 * any page, in the states an owner meets (signed out, wallet picker, review of a signature, a pending approval, an
 * error); landmarks and labels are there; and the owner can sign in and approve a payment with the keyboard alone.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { stackSeller, mintUsdc, type TestSeller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { launchBrowser, screenshot, seriousA11yViolations, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

const USDC = 1_000_000n;

/** Presses Tab until the focused element matches (at most `max` times); returns how many presses it took. */
async function tabTo(page: Page, matches: (el: { text: string; id: string; label: string | null }) => boolean, max = 40): Promise<number> {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press("Tab");
    const el = await page.evaluate(() => {
      const a = document.activeElement as HTMLElement | null;
      return { text: a?.textContent?.trim() ?? "", id: a?.id ?? "", label: a?.getAttribute("aria-label") ?? null };
    });
    if (matches(el)) return i;
  }
  throw new Error("the element was not reached with Tab");
}

/** The focused element shows a visible focus indicator (an outline of at least 2px that is not 'none'). */
async function focusIsVisible(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement;
    const style = getComputedStyle(el);
    return style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2;
  });
}

describe("dashboard accessibility in Chromium: axe-core on every page, labels, landmarks, keyboard only", () => {
  const { s, keep } = stackPerFile();
  let seller: TestSeller;
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let agent: { agentAddress: string; apiKey: string; policyContract: string };
  let fresh: { agentAddress: string };

  before(async () => {
    seller = await stackSeller(s, 1n * USDC);
    browser = await launchBrowser();
    wallet = new TestWallet(randomOwner());
    agent = await s.onboard(wallet.signer, { allowlist: ["127.0.0.1"], approvalThreshold: "0.5", dailyBudget: "10" });
    await mintUsdc(s, agent.agentAddress, 10n * USDC);
    fresh = await s.genesis({ label: "new-bot" });
    page = await browser.newPage();
    await installWallets(page, [wallet, new TestWallet(randomOwner(), "Second Wallet", "org.example.second")], null);
    keep(browser, seller);
  });
  afterEach(async function () {
    if (this.currentTest?.state === "failed")
      await screenshot(page, `failed-a11y-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`);
  });

  async function expectNoSeriousViolations(where: string): Promise<void> {
    const violations = await seriousA11yViolations(page);
    expect(violations, `${where}: ${JSON.stringify(violations, null, 2)}`).to.deep.equal([]);
  }

  it("signed out: landmarks, a skip link, and no serious axe violations on every page", async () => {
    for (const path of ["/", "/onboarding", s.activationPath(fresh.agentAddress), "/agents", "/approvals", "/ledger"]) {
      await page.goto(`${s.url}${path}`);
      await page.locator("#page .loading").waitFor({ state: "detached" });
      expect(await page.getByRole("banner").count(), path).to.equal(1);
      expect(await page.getByRole("navigation", { name: "Main" }).count(), path).to.equal(1);
      expect(await page.getByRole("main").count(), path).to.equal(1);
      expect(await page.getByRole("contentinfo").count(), path).to.equal(1);
      expect(await page.getByRole("heading", { level: 1 }).count(), path).to.equal(1);
      await expectNoSeriousViolations(`signed out ${path}`);
    }
    await page.goto(`${s.url}/ledger`);
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal("Skip to content");
    expect(await focusIsVisible(page)).to.equal(true);
  });

  it("signs in with the keyboard alone: Tab to the button, Enter, pick the wallet in the dialog with Tab and Enter", async () => {
    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").waitFor();
    await tabTo(page, (el) => el.id === "sign-in");
    expect(await focusIsVisible(page)).to.equal(true);
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "Choose a wallet" });
    await dialog.waitFor();
    await expectNoSeriousViolations("wallet picker");
    // The modal dialog takes the focus; Tab stays inside it.
    expect(await page.evaluate(() => !!document.activeElement?.closest("dialog"))).to.equal(true);
    for (let i = 0; i < 5 && (await page.evaluate(() => document.activeElement?.textContent)) !== "Test Wallet"; i++)
      await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal("Test Wallet");
    await page.keyboard.press("Enter");
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
  });

  it("approves a pending payment with the keyboard alone, the list updating by itself", async () => {
    await page.goto(`${s.url}/approvals`);
    await page.locator("#approvals-empty").waitFor();
    const res = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent: "keyboard purchase" },
    });
    expect(res.status).to.equal(202);
    await page.locator(`tr[data-approval="${res.body.approvalId}"]`).waitFor({ timeout: 10_000 });
    await expectNoSeriousViolations("approvals with a pending payment");
    await page.locator("body").focus();
    await tabTo(page, (el) => el.label === "Approve 1.00 USDC to 127.0.0.1");
    expect(await focusIsVisible(page)).to.equal(true);
    await page.keyboard.press("Enter");
    await page.locator(`#decided li[data-approval="${res.body.approvalId}"][data-status=approved]`).waitFor();
    expect((await s.svc.store.approvals.findOne({ approvalId: res.body.approvalId }))?.status).to.equal("approved");
  });

  it("signed in: no serious axe violations on the overview, agents, ledger, policy, onboarding review, explorer and an error", async () => {
    for (const [path, ready] of [
      ["/", "#overview-title"],
      ["/agents", `[data-agent="${agent.agentAddress}"]`],
      [`/policy?agent=${agent.agentAddress}`, "#policy-form"],
      ["/ledger", "#spend-chart"],
    ] as const) {
      await page.goto(`${s.url}${path}`);
      await page.locator(ready).waitFor();
      await expectNoSeriousViolations(`signed in ${path}`);
    }
    await page.locator("details summary").click();
    await expectNoSeriousViolations("ledger with the chart's table open");

    await page.goto(`${s.url}${s.activationPath(agent.agentAddress)}`);
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    await page.locator("#review-typed-data").waitFor();
    await expectNoSeriousViolations("onboarding with the signature review");

    await page.getByLabel("Daily budget (USDC)").fill("ten");
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("policy-dailyBudget");
    expect(await page.getByLabel("Daily budget (USDC)").getAttribute("aria-invalid")).to.equal("true");
    await expectNoSeriousViolations("onboarding with a field error");

    // The sandbox explorer's page of a transaction (static HTML, the dashboard's stylesheet).
    const funded = await s.api("POST", "/dev/faucet", { body: { agentAddress: agent.agentAddress, amount: "1" } });
    await page.goto(`${s.url}/dev/explorer/tx/${funded.body.txHash}`);
    await page.locator("#events").waitFor();
    await expectNoSeriousViolations("the sandbox explorer's transaction page");

    await page.route("**/wallet/agents", (route) => route.abort("connectionrefused"));
    await page.goto(`${s.url}/agents`);
    await page.locator("#alerts .problem").waitFor();
    await expectNoSeriousViolations("an error message");
    await page.unroute("**/wallet/agents");
  });

  it("every form control on every page has an accessible name", async () => {
    for (const path of ["/", s.activationPath(agent.agentAddress), "/agents", "/approvals", "/ledger"]) {
      await page.goto(`${s.url}${path}`);
      await page.locator("#page .loading").waitFor({ state: "detached" });
      await page.waitForLoadState("networkidle");
      const unnamed = await page.evaluate(() =>
        Array.from(document.querySelectorAll("input, select, textarea, button"))
          .filter((el) => {
            const e = el as HTMLInputElement;
            const labelled = (e.labels && e.labels.length > 0) || e.getAttribute("aria-label") || e.getAttribute("aria-labelledby");
            return !(labelled || (el.tagName === "BUTTON" && el.textContent?.trim()));
          })
          .map((el) => el.outerHTML.slice(0, 80)),
      );
      expect(unnamed, path).to.deep.equal([]);
    }
  });
});
