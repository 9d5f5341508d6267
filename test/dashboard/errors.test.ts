/**
 * What goes wrong, as the owner sees it: no wallet, a wallet on the wrong chain, a rejected signature, an expired
 * owner key, an unreachable service, an unknown agent. Each gives a clear message and changes nothing (checked in the
 * store and on-chain), and no page is ever blank.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { stackSeller, mintUsdc, type TestSeller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

const USDC = 1_000_000n;
type TestPage = Page & { errors: string[] };

describe("dashboard errors in Chromium: each failure says what happened and what to do, and changes nothing", () => {
  const { s, keep } = stackPerFile();
  let browser: TestBrowser;
  let seller: TestSeller;
  const opened: TestPage[] = [];

  before(async () => {
    seller = await stackSeller(s, 1n * USDC);
    browser = await launchBrowser();
    keep(browser, seller);
  });
  afterEach(async function () {
    const page = opened.at(-1);
    if (this.currentTest?.state === "failed" && page)
      await screenshot(page, `failed-errors-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`);
    for (const p of opened.splice(0)) {
      expect(p.errors, "errors thrown in the page").to.deep.equal([]);
      await p.close();
    }
  });

  async function pageWith(...wallets: TestWallet[]): Promise<TestPage> {
    const page = await browser.newPage();
    opened.push(page);
    if (wallets.length) await installWallets(page, wallets);
    return page;
  }

  it("an older wallet that only sets window.ethereum, in a browser whose clock is an hour slow, still signs in and links", async () => {
    const wallet = new TestWallet(randomOwner(), "Legacy Wallet", "legacy");
    const page = await browser.newPage();
    opened.push(page);
    await installWallets(page, [wallet], 0, { announce: false });
    await page.clock.setSystemTime(new Date(Date.now() - 3_600_000));
    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    expect(await page.evaluate(() => Date.now())).to.be.lessThan(Date.now() - 3_000_000);
    expect(await page.locator("#account").textContent()).to.include("Browser wallet (window.ethereum)");
    const agent = await s.genesis({ label: "legacy-bot" });
    await page.goto(`${s.url}${s.activationPath(agent.agentAddress)}`);
    await page.locator("#link-agent").click();
    await page.locator("[data-state=linked]").waitFor();
    const signed = JSON.parse(wallet.typedSigned[0].json);
    expect(signed.message.timestamp).to.be.closeTo(s.now(), 30);
  });

  /** The problem shown at the top of the page: its kind and its words. */
  async function problem(page: Page): Promise<{ kind: string; text: string }> {
    const box = page.locator("#alerts .problem");
    await box.waitFor();
    return { kind: (await box.getAttribute("data-kind"))!, text: (await box.textContent())! };
  }

  async function signIn(page: Page, wallet: TestWallet): Promise<void> {
    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
  }

  const ownerKeys = (address: string) => s.svc.store.apiKeys.countDocuments({ role: "owner", ownerAddress: address });

  it("without any wallet: 'No wallet found' and what to do, while the public onboarding page still shows the agent", async () => {
    const agent = await s.genesis({ label: "walletless-bot" });
    const page = await pageWith();
    await page.goto(`${s.url}${s.activationPath(agent.agentAddress)}`);
    await page.getByText("walletless-bot").waitFor();
    await page.locator("#onboarding-sign-in").click();
    const p = await problem(page);
    expect(p.kind).to.equal("wallet-missing");
    expect(p.text).to.include("No wallet found").and.include("Install or enable one, then reload this page");
  });

  it("a wallet on the wrong chain that will not switch: a clear message, no sign-in, nothing stored", async () => {
    const wallet = new TestWallet(randomOwner(), "Test Wallet", "org.spendgate.test-wallet", { chainId: 1 });
    wallet.refuseSwitch = true;
    const page = await pageWith(wallet);
    await page.goto(`${s.url}/`);
    await page.locator("#sign-in").click();
    const p = await problem(page);
    expect(p.kind).to.equal("wrong-chain");
    expect(p.text)
      .to.include("Your wallet is on the wrong network")
      .and.include("Ethereum (chain 1)")
      .and.include("Base (chain 8453)")
      .and.include("Nothing was signed and nothing was changed");
    expect(wallet.callsOf("wallet_switchEthereumChain")).to.have.length(1);
    expect(wallet.callsOf("personal_sign")).to.have.length(0);
    expect(await s.svc.store.siweNonces.countDocuments({ address: wallet.address })).to.equal(0);
    expect(await ownerKeys(wallet.address)).to.equal(0);
    expect(await page.evaluate(() => sessionStorage.length)).to.equal(0);
  });

  it("a wallet that does not know the chain is offered it with the embedded RPC, then signs in", async () => {
    const wallet = new TestWallet(randomOwner(), "Test Wallet", "org.spendgate.test-wallet", { chainId: 1, knownChains: [1] });
    const page = await pageWith(wallet);
    await signIn(page, wallet);
    const [add] = wallet.callsOf("wallet_addEthereumChain");
    expect(add.params[0]).to.deep.include({ chainId: "0x2105", rpcUrls: [s.svc.config.rpcUrl] });
    expect(wallet.chainId).to.equal(8453);
    expect(await ownerKeys(wallet.address)).to.equal(1);
  });

  it("a wallet moved to another chain mid-session: linking stops with a message; 'Switch' fixes it", async () => {
    const wallet = new TestWallet(randomOwner());
    const page = await pageWith(wallet);
    await signIn(page, wallet);
    const agent = await s.genesis({ label: "chain-hopper" });
    wallet.chainId = 1;
    wallet.refuseSwitch = true;
    await page.goto(`${s.url}${s.activationPath(agent.agentAddress)}`);
    await page.locator("#link-agent").click();
    const p = await problem(page);
    expect(p.kind).to.equal("wrong-chain");
    expect(wallet.callsOf("eth_signTypedData_v4")).to.have.length(0);
    expect((await s.svc.store.agents.findOne({ address: agent.agentAddress }))?.ownerAddress).to.equal(null);

    wallet.refuseSwitch = false;
    await page.getByRole("button", { name: "Switch to Base (chain 8453)" }).click();
    await page.locator("#alerts .problem").waitFor({ state: "detached" });
    expect(wallet.chainId).to.equal(8453);
    await page.locator("#link-agent").click();
    await page.locator("[data-state=linked]").waitFor();
  });

  it("a rejected signature (EIP-1193 4001): 'You rejected the request', the agent stays unlinked and no policy is deployed", async () => {
    const wallet = new TestWallet(randomOwner());
    const page = await pageWith(wallet);
    await signIn(page, wallet);
    const agent = await s.genesis({ label: "careful-bot" });
    await page.goto(`${s.url}${s.activationPath(agent.agentAddress)}`);

    wallet.rejectNext.add("eth_signTypedData_v4");
    await page.locator("#link-agent").click();
    let p = await problem(page);
    expect(p.kind).to.equal("rejected");
    expect(p.text).to.include("You rejected the request in your wallet").and.include("Nothing was signed and nothing was changed");
    expect((await s.svc.store.agents.findOne({ address: agent.agentAddress }))?.ownerAddress).to.equal(null);
    expect(await page.locator("#link-agent").isEnabled()).to.equal(true);

    await page.locator("#link-agent").click();
    await page.locator("[data-state=linked]").waitFor();
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    wallet.rejectNext.add("eth_signTypedData_v4");
    await page.locator("#policy-sign").click();
    p = await problem(page);
    expect(p.kind).to.equal("rejected");
    const policy = (await s.api("GET", `/agents/${agent.agentAddress}`)).body.policyContract;
    expect(await s.svc.chain.isDeployed(policy)).to.equal(false);
    expect(await s.svc.store.policies.countDocuments({ agentAddress: agent.agentAddress })).to.equal(0);
  });

  it("an expired owner key: 'Your sign-in has expired', the approval stays pending, signing in again lets it through", async () => {
    const wallet = new TestWallet(randomOwner());
    const agent = await s.onboard(wallet.signer, { allowlist: ["127.0.0.1"], approvalThreshold: "0.5" });
    await mintUsdc(s, agent.agentAddress, 10n * USDC);
    const page = await pageWith(wallet);
    await signIn(page, wallet);
    const pay = await s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent: "a report" },
    });
    expect(pay.status).to.equal(202);
    await page.goto(`${s.url}/approvals`);
    const row = page.locator(`tr[data-approval="${pay.body.approvalId}"]`);
    await row.waitFor();

    await s.svc.store.apiKeys.updateMany(
      { role: "owner", ownerAddress: wallet.address },
      { $set: { expiresAt: new Date(Date.now() - 1000) } },
    );
    await row.getByRole("button", { name: /^Approve / }).click();
    const p = await problem(page);
    expect(p.kind).to.equal("signed-out");
    expect(p.text)
      .to.match(/Your sign-in has expired|Sign in first/)
      .and.include("Sign in again with your wallet")
      .and.include("Nothing was changed");
    expect((await s.svc.store.approvals.findOne({ approvalId: pay.body.approvalId }))?.status).to.equal("pending");
    expect(await s.svc.chain.policyAt(agent.policyContract, s.svc.chain.provider).spentToday()).to.equal(0n);
    expect(await page.evaluate(() => sessionStorage.getItem("spendgate.owner"))).to.equal(null);
    expect(await page.locator("#sign-in").isVisible()).to.equal(true);

    await page.locator("#alerts").getByRole("button", { name: "Sign in again" }).click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    await page
      .locator(`tr[data-approval="${pay.body.approvalId}"]`)
      .getByRole("button", { name: /^Approve / })
      .click();
    await page.locator(`#decided li[data-approval="${pay.body.approvalId}"][data-status=approved]`).waitFor();
  });

  it("an unreachable service: 'SpendGate could not be reached' instead of a blank page", async () => {
    const wallet = new TestWallet(randomOwner());
    const page = await pageWith(wallet);
    await signIn(page, wallet);
    await page.route("**/wallet/agents", (route) => route.abort("connectionrefused"));
    await page.goto(`${s.url}/agents`);
    const p = await problem(page);
    expect(p.kind).to.equal("network");
    expect(p.text).to.include("SpendGate could not be reached").and.include("Check your connection");
    await page.unroute("**/wallet/agents");

    // Even the page's own configuration failing leaves a message and a way out.
    await page.route("**/dashboard/config", (route) => route.abort("connectionrefused"));
    await page.goto(`${s.url}/ledger`);
    expect((await problem(page)).kind).to.equal("network");
    expect(await page.getByRole("button", { name: "Reload the page" }).isVisible()).to.equal(true);
    expect(await page.locator("h1").textContent()).to.equal("Ledger");
    await page.unroute("**/dashboard/config");
  });

  it("an unknown agent on the onboarding page: the API's answer in words, with the next step", async () => {
    const page = await pageWith(new TestWallet(randomOwner()));
    await page.goto(`${s.url}/onboarding?agent=0x${"de".repeat(20)}`);
    const p = await problem(page);
    expect(p.kind).to.equal("api-not_found");
    expect(p.text).to.include("No agent with address").and.include("Check the activation link");
    await page.goto(`${s.url}/onboarding?agent=nonsense`);
    expect(await page.locator("#agent-step").textContent()).to.include('"nonsense" is not an agent address');
  });
});
