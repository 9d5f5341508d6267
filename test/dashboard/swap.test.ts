/**
 * The swap before settlement in the dashboard (Chromium): the owner turns swaps on in the policy form (part of the
 * signed SetPolicy), a bad entry is refused at its field, and the ledger shows a payment's swap with its transaction.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { stackSeller, type TestSeller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

const USDC = 1_000_000n;

describe("dashboard swaps in Chromium: the swap setting in the policy form, the swap in the ledger", () => {
  const { s, keep } = stackPerFile();
  let seller: TestSeller;
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let agent: { agentAddress: string; apiKey: string; policyContract: string };
  // The sandbox chain's transactions are shown by the service itself, not basescan.org (chain id 8453 is Base's too).
  let explorer: string;

  before(async () => {
    explorer = `${s.url}/dev/explorer`;
    seller = await stackSeller(s, 1n * USDC);
    browser = await launchBrowser();
    page = await browser.newPage();
    wallet = new TestWallet(randomOwner());
    await installWallets(page, [wallet], 0);
    agent = await s.onboard(wallet.signer, { allowlist: ["127.0.0.1"], approvalThreshold: "2" });
    // The policy on-chain was signed on a clock 30 s ahead of the page's (or within the same second as its change):
    // the form must sign its change after it, not be refused as stale.
    const ahead = await s.api("POST", "/limits", {
      key: agent.apiKey,
      body: await s.policyBody(
        wallet.signer,
        agent.agentAddress,
        { perTxLimit: "5", dailyBudget: "20", allowlist: ["127.0.0.1"], approvalThreshold: "2" },
        s.now() + 30,
      ),
    });
    expect(ahead.status, JSON.stringify(ahead.body)).to.equal(201);
    keep(browser, seller);
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-swap-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  it("turns swaps on in the policy form: a bad entry is refused at its field, the setting is signed and lands on-chain", async () => {
    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    await page.goto(`${s.url}${s.activationPath(agent.agentAddress)}`);
    const slippage = page.getByLabel("Largest swap slippage (%)");
    await slippage.waitFor();
    expect(await slippage.inputValue()).to.equal("");

    await slippage.fill("25");
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    expect(await page.locator("#policy-maxSwapSlippage-error").textContent()).to.match(/0\.01 to 10/);
    expect(await slippage.getAttribute("aria-invalid")).to.equal("true");
    expect(await page.locator("#policy-review").isHidden()).to.equal(true);
    await slippage.fill("1");
    await page.getByLabel("Average price over (seconds)").fill("30");
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    expect(await page.locator("#policy-swapTwapSeconds-error").textContent()).to.match(/60 to 3600/);

    await page.getByLabel("Average price over (seconds)").fill("900");
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    await page.locator("#review-typed-data").waitFor();
    const shown = JSON.parse((await page.locator("#review-typed-data").textContent())!);
    expect(shown.message).to.include({ maxSwapSlippageBps: "100", swapTwapSeconds: "900" });
    expect(await page.locator("#policy-review").textContent()).to.include("at most 1% above the average price");
    await page.getByRole("button", { name: "Sign and update the policy" }).click();
    await page.locator("#policy-result [data-state=deployed]").waitFor();
    expect(JSON.parse(wallet.typedSigned.at(-1)!.json)).to.deep.equal(shown);
    const onchain = await s.svc.chain.policyAt(agent.policyContract, s.svc.chain.provider).policy();
    expect([onchain.maxSwapSlippageBps, onchain.swapTwapSeconds]).to.deep.equal([100n, 900n]);
  });

  it("shows a payment's swap in the ledger, with its transaction", async () => {
    const faucet = await s.api("POST", "/dev/faucet", { body: { agentAddress: agent.agentAddress, token: "WETH", amount: "1" } });
    expect(faucet.status).to.equal(200);
    const res = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent: "paid with WETH" },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    await page.goto(`${s.url}/ledger`);
    const swap = page.locator(`#ledger-table tbody tr[data-id="${res.body.transactionId}"] [data-field=swap]`);
    await swap.waitFor();
    expect(await swap.textContent()).to.include(`Swapped ${res.body.swap.amountIn} WETH for 1.00 USDC first`);
    expect(await swap.locator(`a[href="${explorer}/tx/${res.body.swap.txHash}"]`).count()).to.equal(1);
  });
});
