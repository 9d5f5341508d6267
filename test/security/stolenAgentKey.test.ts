/**
 * A stolen agent key against its owner: what it can make the owner see and sign. The owner's approval queue is the
 * guard of every payment above the threshold, so what it shows must be what would be paid, and one agent must not be
 * able to bury it.
 */
import { expect } from "chai";
import type { Wallet } from "ethers";
import { MAX_PENDING_APPROVALS } from "../../src/payments";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { expectErrorShape } from "../helpers/store";
import { withSeller, mintUsdc } from "../helpers/sellers";

const USDC = 1_000_000n;

describe("a stolen agent key against its owner's approval queue", () => {
  const { s, seller } = withSeller(stackPerFile(), USDC);
  let owner: Wallet;
  let ownerApiKey: string;

  before(async () => {
    owner = randomOwner();
    ownerApiKey = await ownerKey(s, owner);
  });

  async function agent() {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], approvalThreshold: "0.5" });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    return a;
  }
  const pay = (a: { agentAddress: string; apiKey: string }, serviceUrl = seller.resource, intent = "stolen key") =>
    s.api("POST", "/pay", { key: a.apiKey, body: { agentAddress: a.agentAddress, serviceUrl, maxAmount: "5", intent } });
  const pending = async (address: string) =>
    (await s.api("GET", `/approvals?address=${address}`, { key: ownerApiKey })).body.approvals as Record<string, string>[];

  it("shows the owner the URL that would be requested, not the agent's look-alike spelling of it", async () => {
    const a = await agent();
    // Full-width digits: URL parsing maps them to 127.0.0.1, the host actually called; homoglyph hosts (Cyrillic
    // letters) are the same case, shown as punycode.
    const lookalike = seller.resource.replace("127.0.0.1", "１２７.０.０.１");
    const res = await pay(a, lookalike);
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    expect(res.body.merchant).to.equal("127.0.0.1");
    const [item] = await pending(a.agentAddress);
    expect(item.serviceUrl).to.equal(seller.resource);
    const ledger = await s.api("GET", `/ledger/${res.body.transactionId}`, { key: ownerApiKey });
    expect(ledger.body.serviceUrl).to.equal(seller.resource);
  });

  it(`holds at most ${MAX_PENDING_APPROVALS} pending approvals per agent: more answer 429 and reach neither the queue nor the chain`, async () => {
    const a = await agent();
    const other = await agent();
    for (let i = 0; i < MAX_PENDING_APPROVALS; i++) expect((await pay(a)).status).to.equal(202);
    const nonce = await s.svc.chain.provider.getTransactionCount(s.svc.chain.operator.address);
    const flood = await pay(a);
    expectErrorShape(flood, 429, "too_many_pending_approvals");
    expect(await pending(a.agentAddress)).to.have.length(MAX_PENDING_APPROVALS);
    expect(await s.svc.chain.provider.getTransactionCount(s.svc.chain.operator.address)).to.equal(nonce);
    // The owner's other agents are not held up by it, and a decided approval makes room again.
    expect((await pay(other)).status).to.equal(202);
    await s.svc.services.approvals.expire(new Date(Date.now() + (s.svc.config.approvalTtlSeconds + 1) * 1000));
    expect((await pay(a)).status).to.equal(202);
  });
});
