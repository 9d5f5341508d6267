import { expect } from "chai";
import type { Wallet } from "ethers";
import { toBaseUnits } from "../../src/amounts";
import { NO_EXTRA_LIMITS, SET_POLICY_TYPES, policyDomain } from "../../src/chain/typedData";
import { allowlistRoot, merchantsOf } from "../../src/policy/allowlist";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { withSeller, mintUsdc } from "../helpers/sellers";

const USDC = 1_000_000n;

/**
 * The payment path decides with a cached policy, which the indexer invalidates when the policy changes on-chain. Here
 * the indexer is stopped and the owner's new policy is relayed straight to the contract (as another instance, or the
 * owner's own wallet, would): the cache is stale, and the decision must read the chain again before refusing.
 */
describe("policy decision with a stale cached policy (indexer behind)", () => {
  const { s, seller } = withSeller(stackPerFile(), USDC);
  let owner: Wallet;

  before(async () => {
    owner = randomOwner();
    await s.svc.indexer.stop();
  });

  const pay = (a: { agentAddress: string; apiKey: string }) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: "stale cache test" },
    });

  /** The owner signs a new allowlist and it is relayed to the contract directly: the service's cache is not told. */
  async function relayAllowlist(agentAddress: string, allowlist: string[], timestamp: number): Promise<void> {
    const root = allowlistRoot(allowlist);
    // Another instance wrote the root's entries when it relayed (the chain stores only the root).
    await s.svc.store.allowlists.updateOne(
      { root },
      { $setOnInsert: { root, entries: allowlist, caps: {}, createdAt: new Date() } },
      { upsert: true },
    );
    const policy = {
      perTxLimit: toBaseUnits("5"),
      dailyBudget: toBaseUnits("20"),
      merchants: merchantsOf(allowlist),
      approvalThreshold: toBaseUnits("2"),
      ...NO_EXTRA_LIMITS,
    };
    const signature = await owner.signTypedData(policyDomain(s.svc.config.chainId, agentAddress), SET_POLICY_TYPES, {
      agent: agentAddress,
      ...policy,
      timestamp,
    });
    const chain = s.svc.chain;
    await chain.sendAndWait((o) => chain.policyAt(agentAddress).updatePolicy(policy, timestamp, signature, o));
  }

  it("admits a merchant the cached allowlist lacks once the chain's allowlist has it (read again before refusing)", async () => {
    const a = await s.onboard(owner, { allowlist: ["localhost"] });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const refused = await pay(a); // the seller is 127.0.0.1: not on the list; this caches the policy
    expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
    expect(refused.body).to.include({ status: "blocked", reason: "merchant_not_allowed" });

    await relayAllowlist(a.agentAddress, ["localhost", "127.0.0.1"], s.now() + 2);
    const paid = await pay(a);
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved", merchant: "127.0.0.1" });
  });

  it("simulates again with the new root when the cached root's proof no longer verifies on-chain", async () => {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    expect((await pay(a)).status).to.equal(200); // caches the policy with the one-entry root

    await relayAllowlist(a.agentAddress, ["127.0.0.1", "api.example.com"], s.now() + 2);
    const paid = await pay(a);
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved", remainingDailyBudget: "18" });
  });

  it("a root whose entries the store does not have yet proves nothing, and proves once they arrive (no refusal kept)", async () => {
    const entries = ["127.0.0.1", "late.example.com"];
    const root = allowlistRoot(entries);
    const policies = s.svc.services.policies;
    expect(await policies.prove(root, "127.0.0.1")).to.equal(null);
    await s.svc.store.allowlists.updateOne(
      { root },
      { $setOnInsert: { root, entries, caps: {}, createdAt: new Date() } },
      { upsert: true },
    );
    const proof = await policies.prove(root, "127.0.0.1");
    expect(proof?.proof).to.be.an("array");
    expect(await policies.prove(root, "127.0.0.1"), "kept: the same answer").to.equal(proof);
  });
});
