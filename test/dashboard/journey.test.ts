/**
 * The owner's whole journey in a real browser (Debian's Chromium via playwright-core) against the running service:
 * sign in, open the onboarding link from a genesis answer, link, set a policy and see it deployed, approve and deny
 * payments on the approvals page (which updates without a reload), read them in the ledger, and pull the kill switch.
 */
import { readFileSync } from "node:fs";
import { expect } from "chai";
import type { Page } from "playwright-core";
import { SET_POLICY_TYPES } from "../../src/chain/typedData";
import { allowlistRoot, merchantsOf, normalizeAllowlist, normalizeAllowlistEntry } from "../../src/policy/allowlist";
import { ownerKey } from "../helpers/owner";
import { stackSeller, mintUsdc, usdcBalance, type TestSeller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { SCREENSHOTS, launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

const USDC = 1_000_000n;

describe("dashboard journey in Chromium: sign in, onboard, approve, deny, pause", () => {
  const { s, keep } = stackPerFile();
  let seller: TestSeller;
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let agent: { agentAddress: string; apiKey: string; link: string };
  let policyContract: string;
  // The sandbox chain's transactions are shown by the service itself, not basescan.org (chain id 8453 is Base's too).
  let explorer: string;

  before(async () => {
    explorer = `${s.url}/dev/explorer`;
    seller = await stackSeller(s, 1n * USDC);
    browser = await launchBrowser();
    page = await browser.newPage();
    wallet = new TestWallet(randomOwner());
    // Two wallets side by side; the other one is also window.ethereum, so the page must not list it twice.
    const other = new TestWallet(randomOwner(), "Other Wallet", "org.example.other-wallet");
    await installWallets(page, [other, wallet], 0);
    keep(browser, seller);
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `failed-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  const pay = (intent: string) =>
    s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent },
    });

  it("serves the pages to browsers with a strict CSP, and the same paths as JSON to API clients", async () => {
    const html = await fetch(`${s.url}/approvals`, { headers: { Accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
    expect(html.status).to.equal(200);
    expect(html.headers.get("content-type")).to.match(/^text\/html/);
    expect(html.headers.get("content-security-policy")).to.include("script-src 'self'").and.include("connect-src 'self'");
    const text = await html.text();
    expect(text).to.match(/<script type="module" src="\/dashboard\/assets\/app-[A-Z0-9]+\.js"><\/script>/);
    expect(text).not.to.match(/<script>/);
    const script = /src="(\/dashboard\/assets\/[^"]+)"/.exec(text)![1];
    const asset = await fetch(`${s.url}${script}`);
    expect(asset.headers.get("content-type")).to.match(/^text\/javascript/);
    expect(asset.headers.get("cache-control")).to.include("immutable");
    // An API client on the same path still gets the API.
    expect((await s.api("GET", "/approvals")).body).to.include({ error: "unauthorized", status: 401 });
    expect((await s.api("GET", "/ledger", { headers: { Accept: "*/*" } })).status).to.equal(401);
    const config = (await s.api("GET", "/dashboard/config")).body;
    expect(config).to.include({
      mode: "embedded",
      chainId: 8453,
      chainIdHex: "0x2105",
      rpcUrl: s.svc.config.rpcUrl,
      explorerUrl: explorer,
    });
  });

  it("signs in with SIWE, the owner picking one of two EIP-6963 wallets; the key stays in sessionStorage", async () => {
    await page.goto(`${s.url}/`);
    await page.getByRole("button", { name: "Connect wallet and sign in" }).first().click();
    const picker = page.getByRole("dialog", { name: "Choose a wallet" });
    await picker.waitFor();
    // The sandbox also offers its own test key (embedded mode only: test/dashboard/sandbox.test.ts).
    expect(await picker.getByRole("button").allTextContents()).to.deep.equal([
      "Other Wallet",
      "Test Wallet",
      "Sandbox wallet (a test key kept in this tab)",
      "Cancel",
    ]);
    await picker.getByRole("button", { name: "Test Wallet" }).click();
    await page.locator(`[data-owner="${wallet.address}"]`).waitFor();
    const message = wallet.messagesSigned[0];
    const url = new URL(s.url);
    expect(message).to.include(`${url.host} wants you to sign in with your Ethereum account:\n${wallet.address}`);
    expect(message).to.include(`URI: ${url.origin}`).and.include("Chain ID: 8453");
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem("spendgate.owner"), local: Object.keys(localStorage) }));
    expect(JSON.parse(stored.session!)).to.include({ ownerAddress: wallet.address, wallet: wallet.rdns });
    expect(stored.local).to.deep.equal([]);
  });

  it("opens the onboarding link from a genesis answer and shows the agent", async () => {
    const res = await s.api("POST", "/wallet/genesis", { body: { label: "research-bot", email: "bot@example.com" } });
    expect(res.status).to.equal(201);
    const link = /https?:\/\/\S+\/onboarding\?agent=0x[0-9a-fA-F]{40}&code=[A-Za-z0-9_-]+/.exec(res.body.message)![0];
    expect(link).to.equal(res.body.activationUrl);
    agent = { agentAddress: res.body.agentAddress, apiKey: res.body.apiKey, link };
    await page.goto(link);
    const facts = page.locator("#agent-step");
    await facts.getByText("research-bot").waitFor();
    expect(await facts.textContent())
      .to.include(agent.agentAddress)
      .and.include("not linked yet");
  });

  it("links the agent with the owner's LinkAgent signature", async () => {
    await page.getByRole("button", { name: "Sign and link this agent" }).click();
    await page.locator("[data-state=linked]").waitFor();
    const doc = await s.svc.store.agents.findOne({ address: agent.agentAddress });
    expect(doc?.ownerAddress).to.equal(wallet.address);
    expect(wallet.typedSigned.map((t) => t.primaryType)).to.deep.equal(["LinkAgent"]);
    const code = new URL(agent.link).searchParams.get("code");
    const summary = (await s.api("GET", `/agents/${agent.agentAddress}?code=${code}`)).body;
    expect(Object.keys(summary).sort()).to.deep.equal([
      "address",
      "chainId",
      "createdAt",
      "deployed",
      "label",
      "network",
      "ownerAddress",
      "policyContract",
    ]);
    expect(summary).to.include({ ownerAddress: wallet.address, deployed: false });
    // Without the code, the public view does not tell who owns the agent.
    expect((await s.api("GET", `/agents/${agent.agentAddress}`)).body.ownerAddress).to.equal(null);
  });

  it("normalises allowlist entries in the browser exactly as the server does (IDNA, URLs, ports, wildcards)", async () => {
    const corpus = [
      "Example.COM",
      "bücher.de",
      "xn--bcher-kva.de",
      "münchen.DE",
      "日本.jp",
      "ａｂｃ.com",
      "faß.de",
      "ⓐ.com",
      "soft\u00ADhyphen.com",
      "0x7f.1",
      "1.2.3",
      "256.1.1.1",
      "a..b",
      "-a.com",
      "a_b.com",
      "ex%41mple.com",
      "https://user:pw@api.example.com:8443/x?y#z",
      "api.example.com:443",
      "*.Example.org",
      "*",
      "*.*.example",
      "[::1]",
      "example.com.",
      "http://[::1]:80/",
      "localhost",
      "💩.la",
      // Punycode the browser's URL parser lets through and Node refuses (or keeps): the page must agree with Node.
      "xn--a.com",
      "xn--abc-",
      "xn--kkg.de",
      "xn--e-xbb.com",
      "XN--BCHER-KVA.DE",
      "xn--bcher-kva-.de",
      "xn----eha.com",
      "xn---a.com",
    ];
    const merchant = page.getByLabel("Merchant to add");
    await merchant.fill(corpus.join(" "));
    await merchant.press("Enter");
    const shown = await page
      .locator("#allowlist-entries li")
      .evaluateAll((lis) => lis.map((li) => li.getAttribute("data-normalized") || null));
    expect(shown).to.deep.equal(corpus.map((e) => normalizeAllowlistEntry(e)));
    await page.reload();
    await page.locator("[data-state=linked]").waitFor();
  });

  it("shows the typed data, the normalised allowlist and its root before signing, then deploys the policy", async () => {
    await page.getByLabel("Per-payment limit (USDC)").fill("5");
    await page.getByLabel("Daily budget (USDC)").fill("20");
    await page.getByLabel("Approval threshold (USDC)").fill("0.75");
    const merchant = page.getByLabel("Merchant to add");
    const raw = ["127.0.0.1", "HTTPS://Bücher.Example:8443/shop", "*.Data.Example.org.", "not a host!"];
    for (const entry of raw.slice(0, 2)) {
      await merchant.fill(entry);
      await merchant.press("Enter");
    }
    await merchant.fill(raw[2]);
    await page.getByRole("button", { name: "Add", exact: true }).click();
    await merchant.fill("not_a_host!");
    await merchant.press("Enter");
    const normalised = await page
      .locator("#allowlist-entries li")
      .evaluateAll((lis) => lis.map((li) => li.getAttribute("data-normalized")));
    expect(normalised).to.deep.equal(["127.0.0.1", "xn--bcher-kva.example", "*.data.example.org", ""]);

    // An entry that is not a host blocks the review until it is removed.
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    expect(await page.locator("#allowlist-error").textContent()).to.include("not_a_host!");
    expect(await page.locator("#policy-review").isHidden()).to.equal(true);
    await page.getByRole("button", { name: "Remove not_a_host!" }).click();
    // The richer limits: a weekly budget, a cap on payments per hour and a wildcard entry's own daily cap.
    await page.getByLabel("Weekly budget (USDC)").fill("60");
    await page.getByLabel("Payments per hour").fill("100");
    await page.getByLabel("Daily cap for *.data.example.org in USDC (empty: none)").fill("2.5");
    await page.getByRole("button", { name: "Review what you will sign" }).click();

    const expected = normalizeAllowlist(raw.slice(0, 3)).entries;
    const root = allowlistRoot(expected, { "*.data.example.org": 2_500_000n });
    await page.locator("#review-root").waitFor();
    expect(await page.locator("#review-root").textContent()).to.equal(root);
    expect(await page.locator("#review-allowlist li").allTextContents()).to.deep.equal(expected);
    const shown = JSON.parse((await page.locator("#review-typed-data").textContent())!);
    policyContract = shown.domain.verifyingContract;
    expect(shown.primaryType).to.equal("SetPolicy");
    expect(shown.message).to.include({
      agent: agent.agentAddress,
      perTxLimit: "5000000",
      dailyBudget: "20000000",
      approvalThreshold: "750000",
    });
    // Every merchant, its cap and its payee, in the prompt itself (sorted as the contract requires), and no root.
    expect(shown.message.merchants).to.deep.equal(
      merchantsOf(expected, { "*.data.example.org": 2_500_000n }).map((m) => ({ ...m, dailyCap: m.dailyCap.toString() })),
    );
    expect(shown.message).to.not.have.property("allowlistRoot");
    expect(shown.message).to.include({
      hourlyBudget: "0",
      weeklyBudget: "60000000",
      maxPaymentsPerHour: "100",
      validUntil: "0",
      maxSwapSlippageBps: "0",
    });
    expect(shown.types.SetPolicy.map((f: { name: string }) => f.name)).to.deep.equal(SET_POLICY_TYPES.SetPolicy.map((f) => f.name));

    await page.getByRole("button", { name: "Sign and deploy the policy" }).click();
    await page.locator("#policy-result [data-state=deployed]").waitFor();
    // What the wallet signed is what the page showed.
    expect(JSON.parse(wallet.typedSigned.at(-1)!.json)).to.deep.equal(shown);

    expect(await s.svc.chain.isDeployed(policyContract)).to.equal(true);
    const onchain = await s.svc.chain.policyAt(policyContract, s.svc.chain.provider).policy();
    expect([onchain.perTxLimit, onchain.dailyBudget, onchain.allowlistRoot, onchain.approvalThreshold]).to.deep.equal([
      5n * USDC,
      20n * USDC,
      root,
      750_000n,
    ]);
    expect([onchain.weeklyBudget, onchain.maxPaymentsPerHour]).to.deep.equal([60n * USDC, 100n]);
    const txHash = (await s.svc.store.policies.findOne({ agentAddress: agent.agentAddress }))!.txHash;
    expect(await page.locator(`#policy-result a[href="${explorer}/address/${policyContract}"]`).count()).to.equal(1);
    expect(await page.locator(`#policy-result a[href="${explorer}/tx/${txHash}"]`).count()).to.equal(1);
    expect(await page.locator("#done-step").textContent())
      .to.include(`/limits?address=${agent.agentAddress}`)
      .and.include("deployed: true");

    // The agent's next step works.
    const limits = await s.api("GET", "/limits", { key: agent.apiKey });
    expect(limits.body.agents[0]).to.include({
      deployed: true,
      perTxLimit: "5",
      dailyBudget: "20",
      approvalThreshold: "0.75",
      policyContract,
    });
  });

  it("a payment above the threshold appears on the approvals page without a reload and is approved there", async () => {
    await mintUsdc(s, agent.agentAddress, 50n * USDC);
    await page.goto(`${s.url}/approvals`);
    await page.locator("#approvals-empty").waitFor();
    await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));

    const res = await pay("buy the weekly market report");
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const row = page.locator(`tr[data-approval="${res.body.approvalId}"]`);
    await row.waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).to.equal(true);
    const text = await row.textContent();
    expect(text)
      .to.include("research-bot")
      .and.include("buy the weekly market report")
      .and.include("127.0.0.1")
      .and.include("1.00 USDC")
      .and.match(/\d+ s ago/);

    const sellerBefore = await usdcBalance(s, seller.payTo);
    await row.getByRole("button", { name: "Approve 1.00 USDC to 127.0.0.1" }).click();
    await page.locator(`#decided li[data-approval="${res.body.approvalId}"][data-status=approved]`).waitFor();
    expect(await row.count()).to.equal(0);
    expect((await s.svc.store.approvals.findOne({ approvalId: res.body.approvalId }))?.status).to.equal("approved");
    expect(await usdcBalance(s, seller.payTo)).to.equal(sellerBefore + USDC);
    const signed = JSON.parse(wallet.typedSigned.at(-1)!.json);
    expect(signed.primaryType).to.equal("ApprovalDecision");
    expect(signed.domain.verifyingContract).to.equal(policyContract);
    expect(signed.message).to.include({
      action: "approve",
      approvalId: res.body.approvalId,
      agent: agent.agentAddress,
      merchant: "127.0.0.1",
      amount: "1000000",
    });
  });

  it("shows the approved payment in the ledger with its on-chain link, a spend chart and a CSV export", async () => {
    await page.goto(`${s.url}/ledger`);
    await page.getByLabel("Status").selectOption("approved");
    await page.getByRole("button", { name: "Apply filters" }).click();
    const row = page.locator("#ledger-table tbody tr[data-status=approved]");
    await row.first().waitFor();
    expect(await row.count()).to.equal(1);
    const entry = (await s.svc.store.payments.findOne({ agentAddress: agent.agentAddress, status: "approved" }))!;
    expect(await row.locator(`a[href="${explorer}/tx/${entry.txHash}"]`).count()).to.equal(1);
    expect(page.url()).to.include("status=approved");

    const today = new Date().toISOString().slice(0, 10);
    await page.locator(`#spend-chart rect[data-day="${today}"]`).waitFor();
    expect(Number(await page.locator(`#spend-chart rect[data-day="${today}"]`).getAttribute("height"))).to.be.greaterThan(0);
    expect(await page.locator("#chart-data tbody tr").last().textContent()).to.equal(`${today}120`);

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    expect(download.suggestedFilename()).to.match(/^spendgate-ledger-approved-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = readFileSync(await download.path(), "utf8")
      .trim()
      .split("\r\n");
    expect(csv[0]).to.match(/^id,createdAt,settledAt,agentAddress,merchant/);
    expect(csv).to.have.length(2);
    expect(csv[1]).to.include(entry.txnId).and.include(entry.txHash!).and.include("buy the weekly market report");
  });

  it("a second payment is denied on the approvals page and shows as denied in the ledger", async () => {
    await page.goto(`${s.url}/approvals`);
    await page.locator("#approvals-empty").waitFor();
    const balance = await usdcBalance(s, agent.agentAddress);
    const res = await pay('=HYPERLINK("http://evil.example") <img src=x onerror=alert(1)>');
    expect(res.status).to.equal(202);
    const row = page.locator(`tr[data-approval="${res.body.approvalId}"]`);
    await row.waitFor({ timeout: 10_000 });
    // The agent's text is shown as text, never as markup.
    expect(await row.locator("img").count()).to.equal(0);
    await row.getByRole("button", { name: /^Deny / }).click();
    await page.locator(`#decided li[data-approval="${res.body.approvalId}"][data-status=denied]`).waitFor();
    expect((await s.svc.store.approvals.findOne({ approvalId: res.body.approvalId }))?.status).to.equal("denied");
    expect(await usdcBalance(s, agent.agentAddress)).to.equal(balance);

    await page.goto(`${s.url}/ledger?status=denied`);
    const denied = page.locator("#ledger-table tbody tr[data-status=denied]");
    await denied.first().waitFor();
    expect(await denied.count()).to.equal(1);
    expect(await denied.textContent()).to.include("denied_by_owner");
  });

  it("the pause switch on the agents page stops the next payment with policy_paused", async () => {
    await page.goto(`${s.url}/agents`);
    const card = page.locator(`[data-agent="${agent.agentAddress}"]`);
    await card.waitFor();
    expect(await card.locator("[data-field=status]").textContent()).to.equal("Active");
    expect(await card.locator("[data-field=spent]").textContent()).to.include("1.00 USDC of 20.00 USDC");
    await card.getByRole("button", { name: "Pause all payments of research-bot" }).click();
    await card.locator("[data-field=status]", { hasText: "Paused" }).waitFor();
    expect(await s.svc.chain.policyAt(policyContract, s.svc.chain.provider).paused()).to.equal(true);
    const res = await pay("one more report");
    expect(res.status).to.equal(422);
    expect(res.body).to.include({ status: "blocked", reason: "policy_paused", onchainEvent: "PaymentBlocked" });
  });

  it("withdraws USDC from the agent's wallet with the owner's signature, while it is paused", async () => {
    await page.goto(`${s.url}/agents`);
    const card = page.locator(`[data-agent="${agent.agentAddress}"]`);
    await card.waitFor();
    const before = await usdcBalance(s, agent.agentAddress);
    const to = randomOwner().address;
    await card.getByLabel("Recipient address", { exact: true }).fill(to);
    await card.getByLabel("Amount", { exact: true }).fill("2.5");
    await card.getByRole("button", { name: "Withdraw from research-bot" }).click();
    await page.locator("#alerts .notice", { hasText: "Withdrew 2.5 USDC" }).waitFor();
    expect(await usdcBalance(s, to)).to.equal(2_500_000n);
    expect(await usdcBalance(s, agent.agentAddress)).to.equal(before - 2_500_000n);
  });

  it("saves a screenshot of every page at the end of the journey", async () => {
    const pages: [string, string, string][] = [
      ["overview", "/", "#overview-title"],
      ["onboarding", agent.link.replace(/^https?:\/\/[^/]+/, ""), "#done-step [data-state=deployed]"],
      ["agents", "/agents", `[data-agent="${agent.agentAddress}"]`],
      ["approvals", "/approvals", "#approvals-updated"],
      ["ledger", "/ledger", "#spend-chart"],
    ];
    for (const [name, path, ready] of pages) {
      await page.goto(`${s.url}${path}`);
      await page.locator(ready).first().waitFor();
      await screenshot(page, `journey-${name}`);
    }
    console.log(`      screenshots: ${SCREENSHOTS}`);
    // The owner key from sign-in is still the one in use: one SIWE sign-in for the whole journey.
    expect(wallet.messagesSigned).to.have.length(1);
    expect(await ownerKey(s, randomOwner())).to.match(/^sk_/);
  });
});
