/**
 * Owner-named payees in a real browser (Debian's Chromium via playwright-core) against the running service (issue 23):
 * the owner adds a merchant, the page asks the seller for its quote (POST /merchants/quote, nothing paid) and offers
 * its payTo, she pins it, signs the v3 root and the payment goes through; a seller asking another address is refused;
 * an approval shows the payee and signs it; pause and resume sign the agent's epoch; signatures are dated by the
 * owner's clock (browser or chain), with a warning when the browser's clock is off by more than a minute.
 */
import { expect } from "chai";
import type { Page } from "playwright-core";
import { MERCHANT_TYPE, SET_PAUSED_TYPES, SET_POLICY_TYPES } from "../../src/chain/typedData";
import { allowlistRoot } from "../../src/policy/allowlist";
import { ownerKey } from "../helpers/owner";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { launchBrowser, screenshot, type TestBrowser } from "./helpers/browser";
import { TestWallet, installWallets } from "./helpers/wallet";

const USDC = 1_000_000n;

describe("dashboard payees in Chromium: quote, pin, sign, pay; approvals sign the payee; epochs; owner clock", () => {
  let s: Stack;
  /** The seller whose payee the owner pins (1 USDC), the same seller's pricier route (3 USDC, approval), another payee. */
  let seller: TestSeller;
  let pricey: TestSeller;
  let stranger: TestSeller;
  let browser: TestBrowser;
  let page: Page & { errors: string[] };
  let wallet: TestWallet;
  let agent: { agentAddress: string; apiKey: string; link: string };
  let policyContract: string;

  before(async () => {
    s = await startStack();
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 1n * USDC });
    pricey = await startV2Seller({
      facilitator: await fundedFacilitator(s),
      usdc: s.svc.config.usdcAddress,
      price: 3n * USDC,
      payTo: seller.payTo,
    });
    stranger = await startV2Seller({
      facilitator: await fundedFacilitator(s),
      usdc: s.svc.config.usdcAddress,
      price: 1n * USDC,
      payTo: randomOwner().address,
    });
    browser = await launchBrowser();
    page = await browser.newPage();
    wallet = new TestWallet(randomOwner());
    await installWallets(page, [wallet], 0);
  });
  after(async () => {
    await browser?.close();
    for (const x of [seller, pricey, stranger]) await x?.close();
    await s?.close();
  });
  afterEach(function () {
    if (this.currentTest?.state === "failed" && page)
      return screenshot(page, `payees-failed-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`).then(() => undefined);
    expect(page?.errors ?? [], "errors thrown in the page").to.deep.equal([]);
  });

  const pay = (serviceUrl: string, intent: string) =>
    s.api("POST", "/pay", { key: agent.apiKey, body: { agentAddress: agent.agentAddress, serviceUrl, maxAmount: "5", intent } });

  it("signs in and links a new agent from its activation link", async () => {
    const res = await s.api("POST", "/wallet/genesis", { body: { label: "payee-bot" } });
    expect(res.status).to.equal(201);
    agent = { agentAddress: res.body.agentAddress, apiKey: res.body.apiKey, link: res.body.activationUrl };
    await page.goto(agent.link);
    await page.locator("#fund-after-deployment").waitFor();
    expect(await page.locator("#fund-after-deployment").textContent()).to.include("Fund this agent only after its policy is deployed");
    await page.locator("#onboarding-sign-in").click();
    await page.getByRole("button", { name: "Sign and link this agent" }).click();
    await page.locator("[data-state=linked]").waitFor();
    expect((await s.svc.store.agents.findOne({ address: agent.agentAddress }))?.ownerAddress).to.equal(wallet.address);
  });

  it("POST /merchants/quote answers the seller's payTo without paying; agent keys only for allowed merchants; bad input is a 400", async () => {
    const key = await ownerKey(s, wallet.signer);
    const before = await usdcBalance(s, seller.payTo);
    const res = await s.api("POST", "/merchants/quote", { key, body: { agentAddress: agent.agentAddress, url: seller.resource } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({
      agentAddress: agent.agentAddress,
      merchant: "127.0.0.1",
      payTo: seller.payTo,
      price: "1",
      allowlistEntry: null,
      pinnedPayee: null,
      payeeMatches: null,
      x402Version: 2,
    });
    expect(res.body.accepts.filter((a: { payable: boolean }) => a.payable)).to.deep.equal([
      {
        scheme: "exact",
        network: "eip155:8453",
        asset: s.svc.config.usdcAddress,
        amount: "1000000",
        payTo: seller.payTo,
        payable: true,
      },
    ]);
    expect(await usdcBalance(s, seller.payTo)).to.equal(before);
    // An agent key is no request proxy: a merchant its allowlist does not admit is not asked.
    const asAgent = await s.api("POST", "/merchants/quote", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, url: seller.resource },
    });
    expect(asAgent.body).to.include({ error: "forbidden", status: 403 });
    for (const url of ["ftp://127.0.0.1/x", "http://exa mple.com/", "https://[::1/"]) {
      const bad = await s.api("POST", "/merchants/quote", { key, body: { agentAddress: agent.agentAddress, url } });
      expect(bad.status, url).to.equal(400);
      expect(bad.body).to.include({ error: "bad_request", status: 400 });
    }
    const missing = await s.api("POST", "/merchants/quote", { key, body: { agentAddress: agent.agentAddress } });
    expect(missing.body).to.include({ error: "bad_request", status: 400 });
    // The TWAP the policy form shows beside minSwapRate.
    const price = await s.api("GET", `/agents/${agent.agentAddress}/swap-price?twapSeconds=600`, { key: agent.apiKey });
    expect(price.status, JSON.stringify(price.body)).to.equal(200);
    expect(Number(price.body.usdcPerWeth)).to.be.within(2_900, 3_100);
    const badWindow = await s.api("GET", `/agents/${agent.agentAddress}/swap-price?twapSeconds=5`, { key: agent.apiKey });
    expect(badWindow.body).to.include({ error: "bad_request", status: 400 });
  });

  it("offers the payee the seller's quote names; the owner pins it and signs it in clear with minSwapRate; the contract derives the root", async () => {
    await page.getByLabel("Per-payment limit (USDC)").fill("5");
    await page.getByLabel("Daily budget (USDC)").fill("20");
    await page.getByLabel("Approval threshold (USDC)").fill("2");
    const merchant = page.getByLabel("Merchant to add");
    await merchant.fill(seller.resource);
    await merchant.press("Enter");
    const offer = page.locator("#allowlist-entries [data-offer=offered]");
    await offer.waitFor();
    expect(await offer.getAttribute("data-payto")).to.equal(seller.payTo);
    expect(await offer.textContent()).to.include("(1 USDC)");
    await page.getByRole("button", { name: `Pin ${seller.payTo} as the payee of 127.0.0.1` }).click();
    expect(await page.getByLabel("Payee for 127.0.0.1 (empty: any address)").inputValue()).to.equal(seller.payTo);
    await page.locator("#allowlist-entries [data-offer-state=pinned]").waitFor();
    // A typed payee that is not an address blocks the review.
    await page.getByLabel("Payee for 127.0.0.1 (empty: any address)").fill("0x1234");
    await page.getByRole("button", { name: "Review what you will sign" }).click();
    expect(await page.locator("#allowlist-error").textContent()).to.include("0x address");
    await page.getByLabel("Payee for 127.0.0.1 (empty: any address)").fill(seller.payTo.toLowerCase());
    // The pool's average price is shown beside the floor (the embedded pool trades at 3,000 USDC per WETH).
    await page.locator("#policy-twap[data-price]").waitFor();
    expect(Number(await page.locator("#policy-twap").getAttribute("data-price"))).to.be.within(2_900, 3_100);
    await page.getByLabel("Lowest swap price (USDC per 1 WETH)").fill("1500.5");
    await page.getByRole("button", { name: "Review what you will sign" }).click();

    const root = allowlistRoot(["127.0.0.1"], {}, { "127.0.0.1": seller.payTo });
    await page.locator("#review-root").waitFor();
    expect(await page.locator("#review-root").textContent()).to.equal(root);
    expect(await page.locator("#review-payees li").getAttribute("data-payee")).to.equal(seller.payTo);
    expect(await page.locator("#review-unpinned").count()).to.equal(0);
    const shown = JSON.parse((await page.locator("#review-typed-data").textContent())!);
    policyContract = shown.domain.verifyingContract;
    expect(shown.types.SetPolicy.map((f: { name: string }) => f.name)).to.deep.equal(SET_POLICY_TYPES.SetPolicy.map((f) => f.name));
    expect(shown.message).to.include({ minSwapRate: "1500500000", approvalThreshold: "2000000" });
    // The wallet is asked to sign the entry, its cap and its payee in clear: no root it could not check.
    expect(shown.message).to.not.have.property("allowlistRoot");
    expect(shown.types.Merchant).to.deep.equal(MERCHANT_TYPE);
    expect(shown.message.merchants).to.deep.equal([{ entry: "127.0.0.1", dailyCap: "0", payee: seller.payTo, requireSignedOffer: false }]);
    // Dated by the owner's clock (browser or chain, the later): within seconds of now.
    expect(Math.abs(shown.message.timestamp - Math.floor(Date.now() / 1000))).to.be.below(30);
    expect(await page.locator("#clock-warning").count()).to.equal(0);

    await page.getByRole("button", { name: "Sign and deploy the policy" }).click();
    await page.locator("#policy-result [data-state=deployed]").waitFor();
    expect(JSON.parse(wallet.typedSigned.at(-1)!.json)).to.deep.equal(shown);
    const onchain = await s.svc.chain.policyAt(policyContract, s.svc.chain.provider).policy();
    expect(onchain.allowlistRoot).to.equal(root);
    expect(onchain.minSwapRate).to.equal(1_500_500_000n);
    const limits = (await s.api("GET", `/limits?address=${agent.agentAddress}`, { key: agent.apiKey })).body.agents[0];
    expect(limits).to.include({ deployed: true, minSwapRate: "1500.5" });
    expect(limits.payees).to.deep.equal({ "127.0.0.1": seller.payTo });
    expect(await page.locator("#fund-now").textContent()).to.include("you can now fund");
  });

  it("pays the pinned payee; a seller asking another address is refused with payee_not_allowed and nothing moves", async () => {
    await mintUsdc(s, agent.agentAddress, 20n * USDC);
    const before = await usdcBalance(s, seller.payTo);
    const paid = await pay(seller.resource, "one forecast");
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body.status).to.equal("approved");
    expect(await usdcBalance(s, seller.payTo)).to.equal(before + USDC);

    const wallet0 = await usdcBalance(s, agent.agentAddress);
    const refused = await pay(stranger.resource, "same host, another payee");
    expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
    expect(refused.body).to.include({ status: "blocked", reason: "payee_not_allowed", payTo: stranger.payTo, pinnedPayee: seller.payTo });
    expect(await usdcBalance(s, agent.agentAddress)).to.equal(wallet0);
    expect(await usdcBalance(s, stranger.payTo)).to.equal(0n);

    // The quote endpoint now says the stranger's payee would be refused, for the owner and for the agent.
    const q = await s.api("POST", "/merchants/quote", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, url: stranger.resource },
    });
    expect(q.status).to.equal(200);
    expect(q.body).to.include({ allowlistEntry: "127.0.0.1", pinnedPayee: seller.payTo, payTo: stranger.payTo, payeeMatches: false });
  });

  it("shows the payee of a payment waiting for approval, says it matches the pinned one, and signs it", async () => {
    await page.goto(`${s.url}/approvals`);
    await page.locator("#approvals-empty").waitFor();
    const res = await pay(pricey.resource, "the premium report");
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const row = page.locator(`tr[data-approval="${res.body.approvalId}"]`);
    await row.waitFor({ timeout: 10_000 });
    const payee = row.locator("[data-field=payee]");
    await payee.locator("code").waitFor();
    expect(await payee.getAttribute("data-payee")).to.equal("matches");
    expect(await payee.textContent())
      .to.include(seller.payTo)
      .and.include("matches the pinned payee of 127.0.0.1");
    const approvals = (await s.api("GET", "/approvals", { key: await ownerKey(s, wallet.signer) })).body.approvals;
    expect(approvals.find((a: { id: string }) => a.id === res.body.approvalId).payTo).to.equal(seller.payTo);

    const before = await usdcBalance(s, seller.payTo);
    await row.getByRole("button", { name: "Approve 3.00 USDC to 127.0.0.1" }).click();
    await page.locator(`#decided li[data-approval="${res.body.approvalId}"][data-status=approved]`).waitFor();
    expect(await usdcBalance(s, seller.payTo)).to.equal(before + 3n * USDC);
    const signed = JSON.parse(wallet.typedSigned.at(-1)!.json);
    expect(signed.primaryType).to.equal("ApprovalDecision");
    expect(signed.types.ApprovalDecision.map((f: { name: string }) => f.name)).to.deep.equal([
      "action",
      "approvalId",
      "agent",
      "merchant",
      "payTo",
      "amount",
      "timestamp",
    ]);
    expect(signed.message).to.include({ action: "approve", merchant: "127.0.0.1", payTo: seller.payTo, amount: "3000000" });
  });

  it("pauses and resumes on the agents page, the resume signing the agent's current epoch (within the same second)", async () => {
    // The page's clock stands still: the resume is signed in the same second as the pause, which the contract refuses
    // unless the page dates it later (owner actions must be newer than the last one).
    await page.clock.setFixedTime(Date.now());
    await page.goto(`${s.url}/agents`);
    const card = page.locator(`[data-agent="${agent.agentAddress}"]`);
    await card.waitFor();
    await card.getByRole("button", { name: "Pause all payments of payee-bot" }).click();
    await card.locator("[data-field=status]", { hasText: "Paused" }).waitFor();
    const epoch = Number(await s.svc.chain.policyAt(policyContract, s.svc.chain.provider).epoch());
    await card.getByRole("button", { name: "Resume payments of payee-bot" }).click();
    await card.locator("[data-field=status]", { hasText: "Active" }).waitFor();
    const pause = JSON.parse(wallet.typedSigned.at(-2)!.json);
    const resume = JSON.parse(wallet.typedSigned.at(-1)!.json);
    expect(pause.message).to.include({ paused: true });
    expect(Number(resume.message.timestamp)).to.be.above(Number(pause.message.timestamp));
    expect(resume.primaryType).to.equal("SetPaused");
    expect(resume.types.SetPaused.map((f: { name: string }) => f.name)).to.deep.equal(SET_PAUSED_TYPES.SetPaused.map((f) => f.name));
    expect(resume.message).to.include({ paused: false, epoch: String(epoch) });
    expect(await s.svc.chain.policyAt(policyContract, s.svc.chain.provider).paused()).to.equal(false);
    const paid = await pay(seller.resource, "after the resume");
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
  });

  it("with the browser's clock 10 minutes behind, warns and dates signatures by the chain's time", async () => {
    const late = await browser.newPage();
    await late.clock.setSystemTime(Date.now() - 10 * 60_000);
    await installWallets(late, [wallet], 0);
    // The tab shares the signed-in session only through sessionStorage: sign in again in this tab.
    await late.goto(`${s.url}/agents`);
    await late.getByRole("button", { name: "Connect wallet and sign in" }).first().click();
    const card = late.locator(`[data-agent="${agent.agentAddress}"]`);
    await card.waitFor();
    const warning = late.locator("#clock-warning");
    expect(await warning.textContent()).to.include("about 10 min behind the chain");
    await card.getByRole("button", { name: "Pause all payments of payee-bot" }).click();
    await card.locator("[data-field=status]", { hasText: "Paused" }).waitFor();
    const pause = JSON.parse(wallet.typedSigned.at(-1)!.json);
    expect(Math.abs(pause.message.timestamp - Math.floor(Date.now() / 1000))).to.be.below(30);
    expect(late.errors).to.deep.equal([]);
    await late.close();
  });
});
