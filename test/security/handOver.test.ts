/**
 * A hand-over (SetOwner) while one of the agent's payments is in flight: what that payment records belongs to the new
 * owner, never to the one who handed the agent over.
 */
import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { handOver, ownerKey } from "../helpers/owner";
import { approvalDecision } from "../helpers/payments";
import { expectErrorShape } from "../helpers/store";
import { listen } from "../helpers/sellerServer";
import { stackSeller, mintUsdc, type TestSeller } from "../helpers/sellers";

const USDC = 1_000_000n;

describe("a hand-over while a payment is in flight", () => {
  const { s, keep } = stackPerFile();
  let seller: TestSeller;
  let gated: Awaited<ReturnType<typeof listen>>;
  let arrived: () => void = () => undefined;
  let release: () => void = () => undefined;

  before(async () => {
    seller = await stackSeller(s, USDC);
    // The seller's 402, held until the test lets it go.
    gated = await listen(async (_req, res) => {
      arrived();
      await new Promise<void>((resolve) => (release = resolve));
      const quote = await fetch(seller.resource);
      const headers: Record<string, string> = {};
      quote.headers.forEach((v, k) => {
        if (k !== "content-length" && k !== "transfer-encoding") headers[k] = v;
      });
      res.writeHead(quote.status, headers).end(await quote.text());
    });
    keep(gated, seller);
  });

  it("gives an approval requested before the hand-over to the new owner: the old one can neither see nor deny it", async () => {
    const owner = randomOwner();
    const heir = randomOwner();
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], approvalThreshold: "0.5" });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const ownerApiKey = await ownerKey(s, owner);
    const heirKey = await ownerKey(s, heir);

    const atSeller = new Promise<void>((resolve) => (arrived = resolve));
    const paying = s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: `${gated.url}/resource`, maxAmount: "5", intent: "in flight" },
    });
    await atSeller;
    const handedOver = await handOver(s, owner, a.agentAddress, heir.address, ownerApiKey);
    expect(handedOver.status, JSON.stringify(handedOver.body)).to.equal(200);
    release();
    const res = await paying;
    expect(res.status, JSON.stringify(res.body)).to.equal(202);

    const ids = async (key: string) => ((await s.api("GET", "/approvals", { key })).body.approvals as { id: string }[]).map((x) => x.id);
    expect(await ids(heirKey)).to.include(res.body.approvalId);
    expect(await ids(ownerApiKey)).to.not.include(res.body.approvalId);
    const item = { id: res.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "1" };
    const deny = await s.api("POST", `/approvals/${item.id}/deny`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "deny"),
    });
    expectErrorShape(deny, 403, "forbidden");
    expect((await s.api("GET", `/ledger/${res.body.transactionId}`, { key: heirKey })).status).to.equal(200);
    expectErrorShape(await s.api("GET", `/ledger/${res.body.transactionId}`, { key: ownerApiKey }), 403, "forbidden");
  });
});
