/**
 * The dashboard signs on the agent's chain: with NETWORKS=base,base-sepolia, an owner whose wallet is on Base onboards
 * an agent of Base Sepolia. The page asks the wallet to switch to 0x14a34; a wallet that does not know that chain is
 * asked to add it (wallet_addEthereumChain with the network table's data and the sandbox's RPC), then the owner's
 * LinkAgent and SetPolicy are signed for chain 84532 and the policy is deployed on Base Sepolia's chain.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

describe("dashboard in Chromium: an agent on another network than the first", () => {
  const { s, keep } = stackPerFile({ NETWORKS: "base,base-sepolia" });
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let agent: { agentAddress: string; link: string };

  before(async () => {
    browser = await launchBrowser();
    page = await browser.newPage();
    // On Base, and knowing only Ethereum and Base: Base Sepolia must be added.
    wallet = new TestWallet(randomOwner(), "Test Wallet", "org.spendgate.test-wallet", { chainId: 8453, knownChains: [1, 8453] });
    await installWallets(page, [wallet], 0);
    keep(browser);
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  it("lists both networks in the page config, each with what a wallet needs to add it", async () => {
    const config = (await s.api("GET", "/dashboard/config")).body;
    const sepolia = s.svc.networks[1];
    expect(config.networks.map((n: { name: string; chainIdHex: string }) => [n.name, n.chainIdHex])).to.deep.equal([
      ["base", "0x2105"],
      ["base-sepolia", "0x14a34"],
    ]);
    expect(config.networks[1]).to.deep.include({
      rpcUrl: sepolia.config.rpcUrl,
      usdcAddress: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    });
  });

  it("signs in on Base, then links a Base Sepolia agent: the wallet adds and switches to 0x14a34 and signs for 84532", async () => {
    const res = await s.api("POST", "/wallet/genesis", { body: { label: "sepolia-bot", network: "base-sepolia" } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({ network: "base-sepolia", chainId: 84532 });
    agent = { agentAddress: res.body.agentAddress, link: res.body.activationUrl };

    await page.goto(`${s.url}/`);
    await page.getByRole("button", { name: "Connect wallet and sign in" }).first().click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    expect(wallet.messagesSigned[0]).to.include("Chain ID: 8453");

    await page.goto(agent.link);
    await page.locator("#agent-step").getByText("sepolia-bot").waitFor();
    expect(await page.locator('#agent-step [data-field="network"]').textContent()).to.include("Base Sepolia");
    await page.getByRole("button", { name: "Sign and link this agent" }).click();
    await page.locator("[data-state=linked]").waitFor();

    expect(wallet.callsOf("wallet_switchEthereumChain")[0].params).to.deep.equal([{ chainId: "0x14a34" }]);
    const [added] = wallet.callsOf("wallet_addEthereumChain").map((c) => c.params[0] as Record<string, unknown>);
    expect(added).to.deep.include({
      chainId: "0x14a34",
      rpcUrls: [s.svc.networks[1].config.rpcUrl],
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    });
    expect(added.chainName).to.include("Base Sepolia");
    expect(wallet.chainId).to.equal(84532);
    const linked = JSON.parse(wallet.typedSigned.at(-1)!.json) as { primaryType: string; domain: { chainId: number } };
    expect(linked).to.deep.include({ primaryType: "LinkAgent" });
    expect(linked.domain.chainId).to.equal(84532);
    expect((await s.svc.store.agents.findOne({ address: agent.agentAddress }))?.ownerAddress).to.equal(wallet.address);
  });

  it("deploys the policy it signed for chain 84532 on Base Sepolia's chain, not on Base's", async () => {
    await page.getByLabel("Per-payment limit (USDC)").fill("1");
    await page.getByLabel("Daily budget (USDC)").fill("5");
    await page.getByLabel("Approval threshold (USDC)").fill("1");
    const merchant = page.getByLabel("Merchant to add");
    await merchant.fill("127.0.0.1");
    await merchant.press("Enter");
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    await page.locator("#review-typed-data").waitFor();
    const shown = JSON.parse((await page.locator("#review-typed-data").textContent())!) as { domain: { chainId: number } };
    expect(shown.domain.chainId).to.equal(84532);
    await page.getByRole("button", { name: "Sign and deploy the policy" }).click();
    await page.locator("#policy-result [data-state=deployed]").waitFor();
    const [base, sepolia] = s.svc.networks;
    expect(await sepolia.chain.isDeployed(agent.agentAddress)).to.equal(true);
    expect(await base.chain.isDeployed(agent.agentAddress)).to.equal(false);
  });
});
