/**
 * Proof of purchase (issue 38, docs/receipts.md): stock x402 sellers that sign their offers and receipts (the
 * offer-receipt extension of @x402/extensions, EIP-712 and JWS) are paid, and each ledger entry carries the receipt as
 * checked; a receipt that does not match its offer flags the entry and tells the owner, and never hides what was
 * paid; an allowlist entry that requires signed offers refuses a seller that signs none, before anything moves.
 */
import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { fundedFacilitator, mintUsdc, stackSeller, usdcBalance } from "../helpers/sellers";
import { startOfferReceiptSeller } from "../helpers/sellerOfferReceipt";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { spentToday } from "../helpers/payments";
import { fetchLedger, receiptSummary } from "../../src/audit/ledgerAudit";
import { auditOutput, runAudit } from "../helpers/auditCli";

const USDC = 1_000_000n;
const PRICE = 250_000n;

describe("proof of purchase: signed offers and receipts in the ledger", function () {
  this.timeout(120_000);
  const { s, keep } = stackPerFile();
  let receiver: Receiver;

  before(async () => {
    receiver = keep(await startReceiver());
  });

  async function agent(policy: Record<string, unknown> = {}) {
    const owner = randomOwner();
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
    await mintUsdc(s, a.agentAddress, 5n * USDC);
    return { ...a, owner };
  }
  const pay = (a: { agentAddress: string; apiKey: string }, serviceUrl: string) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl, maxAmount: "1", intent: "proof of purchase" },
    });
  const ledgerEntry = async (a: { agentAddress: string; apiKey: string }, id: string) => {
    const res = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(res.status).to.equal(200);
    return (res.body.transactions as Record<string, any>[]).find((t) => t.id === id);
  };
  const offerSeller = async (opts: Omit<Parameters<typeof startOfferReceiptSeller>[0], "facilitator" | "usdc" | "price">) =>
    keep(await startOfferReceiptSeller({ ...opts, facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: PRICE }));

  for (const format of ["eip712", "jws"] as const) {
    it(`pays a stock seller signing with ${format}; the entry carries its verified receipt, paid by the agent's wallet`, async () => {
      const seller = await offerSeller({ format });
      const a = await agent();
      const res = await pay(a, seller.resource);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(seller.settlements).to.deep.equal([res.body.txHash]);
      const entry = await ledgerEntry(a, res.body.transactionId);
      expect(entry?.status).to.equal("approved");
      expect(entry?.receipt).to.deep.equal({ signer: seller.signer, issuedAt: entry?.receipt.issuedAt, verified: true });
      expect(entry?.receipt.issuedAt).to.be.a("number");
      // The stored receipt names the agent's wallet as its payer, and the settlement as its transaction.
      const doc = await s.svc.store.payments.findOne({ txnId: res.body.transactionId });
      const signed = doc?.receipt?.signed as { payload?: { payer: string; transaction: string }; signature: string };
      const payload =
        format === "eip712"
          ? signed.payload
          : (JSON.parse(Buffer.from(signed.signature.split(".")[1], "base64url").toString()) as typeof signed.payload);
      expect(payload?.payer.toLowerCase()).to.equal(a.agentAddress.toLowerCase());
      expect(doc?.offer?.signer).to.equal(seller.signer);
      expect(receiptSummary(await fetchLedger(s.url, a.apiKey))).to.deep.equal({ verified: 1, flagged: [], none: 0 });
    });
  }

  const bent = [
    { what: "names another payer", receipt: { payer: "0x" + "22".repeat(20) }, problem: /another payer/ },
    // A receipt for another purchase: a transaction of another amount (here a mint of 1 base unit), not this settlement.
    { what: "names another transaction (of another amount)", receipt: { transaction: "" }, problem: /names transaction/ },
    { what: "is missing", receipt: { omit: true }, problem: /no receipt/ },
  ];
  for (const b of bent) {
    it(`a seller whose receipt ${b.what}: paid once, the entry flagged (still approved), the owner told why`, async () => {
      const receipt = { ...b.receipt };
      if ("transaction" in receipt) {
        const { chain } = s.svc;
        const { receipt: mint } = await chain.sendAndWait((o) => chain.usdc.connect(chain.operator).mint(chain.operator.address, 1n, o));
        receipt.transaction = mint.hash;
      }
      const seller = await offerSeller({ format: "eip712", receipt });
      const a = await agent();
      const key = await ownerKey(s, a.owner);
      const tag = a.owner.address.toLowerCase();
      const hook = await s.api("POST", "/webhooks", { key, body: { url: `${receiver.url}?${tag}`, events: ["payment.receipt_invalid"] } });
      expect(hook.status, JSON.stringify(hook.body)).to.equal(201);

      const res = await pay(a, seller.resource);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(seller.settlements).to.have.length(1);
      expect(await usdcBalance(s, a.agentAddress)).to.equal(5n * USDC - PRICE);
      const entry = await ledgerEntry(a, res.body.transactionId);
      expect(entry?.status, "the money moved: the entry stays approved").to.equal("approved");
      expect(entry?.receipt.verified).to.equal(false);
      expect(entry?.receipt.problem).to.match(b.problem);
      // npm run audit -- --ledger counts it among the flagged.
      const audited = receiptSummary(await fetchLedger(s.url, a.apiKey));
      expect(audited.flagged.map((f) => f.id)).to.deep.equal([res.body.transactionId]);
      expect(audited.verified).to.equal(0);

      const seen = () => receiver.requests.filter((r) => r.path.endsWith(`?${tag}`));
      const [told] = await receiver.until(() => seen().length === 1);
      const event = seen()[0] ?? told;
      expect(event.body.type).to.equal("payment.receipt_invalid");
      expect(event.body.data.id).to.equal(res.body.transactionId);
      expect(event.body.data.problem).to.match(b.problem);
    });
  }

  it("an entry requiring signed offers refuses a seller that signs none: 422 with the reason, nothing signed or moved", async () => {
    const plain = keep(await stackSeller(s, PRICE));
    const a = await agent({ requireSignedOffer: ["127.0.0.1"] });
    const res = await pay(a, plain.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body.status).to.equal("blocked");
    expect(res.body.reason).to.equal("signed_offer_required");
    expect(res.body.onchainEvent, "a rule the service keeps: no on-chain record").to.equal(null);
    expect(res.body.message).to.match(/sign its offers/);
    expect(plain.hits.paid, "nothing was sent to the seller").to.equal(0);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(5n * USDC);
    expect(await spentToday(s, a.agentAddress)).to.equal(0n);

    // The same entry pays a seller that signs its offers.
    const signing = await offerSeller({ format: "eip712" });
    const ok = await pay(a, signing.resource);
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
  });

  it("npm run audit -- --ledger reports the approved entries with a verified receipt, a flagged one and none", async () => {
    const a = await agent();
    const sellers = [
      await offerSeller({ format: "jws" }),
      await offerSeller({ format: "eip712", receipt: { payer: "0x" + "33".repeat(20) } }),
      keep(await stackSeller(s, PRICE)),
    ];
    for (const seller of sellers) expect((await pay(a, seller.resource)).status).to.equal(200);
    const cli = await runAudit(s, { key: await ownerKey(s, a.owner) });
    expect(cli.code, cli.stderr || cli.stdout.slice(-2000)).to.equal(0);
    const { report, summary } = auditOutput(cli.stdout);
    expect(report.ledgerDisagreements).to.deep.equal([]);
    expect(summary).to.match(/0 anomalies \(0 on-chain, 0 in the ledger\); receipts: 1 verified, 1 flagged, 1 approved without one$/);
  });
});
