/**
 * The Webhooks page in a real browser (Debian's Chromium via playwright-core) against the running service and a
 * real local receiver: add an endpoint (its secret shown once), see it listed, send a test event and read its
 * delivery, disable it; no serious axe violations.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { launchBrowser, screenshot, seriousA11yViolations, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

describe("dashboard webhooks page in Chromium: add, list, test, deliveries, disable", () => {
  const { s, keep } = stackPerFile({ WEBHOOK_BACKOFF_BASE_MS: "20", WEBHOOK_POLL_MS: "50" });
  let receiver: Receiver;
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;

  before(async () => {
    receiver = await startReceiver();
    browser = await launchBrowser();
    page = await browser.newPage();
    wallet = new TestWallet(randomOwner());
    await installWallets(page, [wallet], 0);
    keep(browser, receiver);
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-webhooks-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  it("asks a signed-out visitor to sign in, then shows an empty list", async () => {
    await page.goto(`${s.url}/webhooks`);
    await page.locator("#page .loading").waitFor({ state: "detached" });
    expect(await page.locator("h1").textContent()).to.equal("Webhooks: alerts to your endpoints");
    expect(
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Webhooks" }).getAttribute("aria-current"),
    ).to.equal("page");
    await page.getByRole("button", { name: "Connect wallet and sign in" }).first().click();
    const picker = page.getByRole("dialog", { name: "Choose a wallet" });
    if (await picker.isVisible().catch(() => false)) await picker.getByRole("button", { name: "Test Wallet" }).click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    await page.goto(`${s.url}/webhooks`);
    await page.locator("#webhooks-empty").waitFor();
  });

  it("adds an endpoint: the secret is shown once, the endpoint listed; a test event is delivered and shown in its log", async () => {
    await page.getByLabel("Endpoint URL").fill(receiver.url);
    await page.getByLabel("Description (optional)").fill("my receiver");
    await page.getByRole("checkbox", { name: /payment\.blocked/ }).check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secret = await page.locator("#webhook-secret-value").inputValue();
    expect(secret).to.match(/^whsec_/);
    const row = page.locator("#webhooks-table tbody tr");
    await row.first().waitFor();
    expect(await row.count()).to.equal(1);
    const id = (await row.first().getAttribute("data-id"))!;
    const stored = (await s.svc.webhooks.outbox.c.endpoints.findOne({ endpointId: id }))!;
    expect(stored.events).to.deep.equal(["approval.requested", "payment.blocked"]);
    expect(stored.description).to.equal("my receiver");
    expect(await seriousA11yViolations(page), "axe").to.deep.equal([]);

    await page.getByRole("button", { name: `Send a test event to ${receiver.url}` }).click();
    await receiver.until((r) => r.some((x) => x.body.type === "webhook.test"));
    let delivered = false;
    for (let i = 0; i < 20 && !delivered; i++) {
      await page.getByRole("button", { name: "Refresh" }).click();
      await page.locator("#deliveries-table tbody tr").first().waitFor();
      delivered = (await page.locator("#deliveries-table tbody tr").first().getAttribute("data-status")) === "delivered";
    }
    expect(delivered).to.equal(true);
    expect(await page.locator("#deliveries-table tbody tr").first().textContent())
      .to.include("webhook.test")
      .and.include("HTTP 200");

    // Reloaded, the page never shows the secret again.
    await page.reload();
    await page.locator("#webhooks-table").waitFor();
    expect(await page.locator("#webhook-secret-value").count()).to.equal(0);
    expect(await page.content()).to.not.include(secret);
  });

  it("disables an endpoint", async () => {
    await page.getByRole("button", { name: `Disable ${receiver.url}` }).click();
    await page.locator('#webhooks-table tbody tr[data-status="disabled"]').waitFor();
    expect((await s.svc.webhooks.outbox.c.endpoints.findOne({}))!.status).to.equal("disabled");
    expect(await page.getByRole("button", { name: `Send a test event to ${receiver.url}` }).count()).to.equal(0);
  });
});
