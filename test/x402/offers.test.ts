/**
 * A seller's signed offers (x402 offer-receipt) decide what is payable: when it signed any, only a requirement a
 * verified, unexpired offer for this host names exactly is paid; an offer signed for another price, another payee,
 * another host, or with no signature at all makes nothing payable (docs/receipts.md). EIP-712 recovers a signer from
 * any well-formed signature: an altered offer names another signer, which the receipt then does not match.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import {
  OFFER_RECEIPT,
  type OfferReceiptIssuer,
  type EIP712SignedOffer,
  createEIP712OfferReceiptIssuer,
  hashOfferTypedData,
  hashReceiptTypedData,
  verifyOfferSignatureEIP712,
} from "@x402/extensions/offer-receipt";
import { DIGESTED, offerDigest, receiptDigest } from "../../src/x402/offerReceiptDigest";
import { nativeRecovering } from "../../src/chain/ecdsa";
import { readOffers } from "../../src/x402/offerReceipt";
import { pickQuote } from "../../src/x402/pick";
import { freshIssuer } from "../helpers/sellerOfferReceipt";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const OPTS = { chainId: 8453, usdcAddress: USDC, payer: Wallet.createRandom().address };
const URL = "https://seller.example/r";

const requirement = (over: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: "exact",
  network: "eip155:8453",
  asset: USDC,
  amount: "1000",
  payTo: Wallet.createRandom().address,
  maxTimeoutSeconds: 60,
  extra: { name: "USD Coin", version: "2" },
  ...over,
});

/** A 402 carrying `accepts` and `issuer`'s offers of `signed` (at `resourceUrl`), with `bend` applied to each. */
async function required(
  accepts: PaymentRequirements[],
  issuer: OfferReceiptIssuer,
  signed: PaymentRequirements[] = accepts,
  resourceUrl = URL,
  bend: (o: Record<string, unknown>) => Record<string, unknown> = (o) => o,
): Promise<PaymentRequired> {
  const offers = await Promise.all(signed.map((r, acceptIndex) => issuer.issueOffer(resourceUrl, { acceptIndex, ...r })));
  return {
    x402Version: 2,
    resource: { url: URL },
    accepts,
    extensions: { [OFFER_RECEIPT]: { info: { offers: offers.map((o) => bend(o as unknown as Record<string, unknown>)) } } },
  };
}

async function pick(paymentRequired: PaymentRequired) {
  const offers = await readOffers(paymentRequired, URL);
  return { offers, quote: pickQuote(paymentRequired, { ...OPTS, offers }) };
}

describe("signed offers decide what is payable", () => {
  for (const format of ["eip712", "jws"] as const) {
    it(`pays the requirement a verified ${format} offer names, with that offer`, async () => {
      const { issuer, signer } = freshIssuer(format);
      const r = requirement();
      const { offers, quote } = await pick(await required([r], issuer));
      expect(offers.sent).to.equal(1);
      expect(quote?.requirement).to.deep.equal(r);
      expect(quote?.offer?.signer).to.equal(signer);
    });
  }

  it("pays nothing the seller did not sign: another price or another payee than its offer", async () => {
    const { issuer } = freshIssuer("eip712");
    const r = requirement();
    expect((await pick(await required([{ ...r, amount: "1001" }], issuer, [r]))).quote).to.equal(null);
    expect((await pick(await required([{ ...r, payTo: Wallet.createRandom().address }], issuer, [r]))).quote).to.equal(null);
    // Of two requirements, the signed one.
    const other = requirement({ amount: "5" });
    expect((await pick(await required([other, r], issuer, [r]))).quote?.requirement).to.deep.equal(r);
  });

  it("pays nothing under an offer for another host, or whose signature is no signature", async () => {
    const { issuer } = freshIssuer("eip712");
    const r = requirement();
    const elsewhere = await pick(await required([r], issuer, [r], "https://other.example/r"));
    expect(elsewhere.offers).to.deep.include({ sent: 1 });
    expect(elsewhere.offers.offers).to.deep.equal([]);
    expect(elsewhere.quote).to.equal(null);
    const garbled = await pick(await required([r], issuer, [r], URL, (o) => ({ ...o, signature: "0x1234" })));
    expect(garbled.offers.offers).to.deep.equal([]);
    expect(garbled.quote).to.equal(null);
  });

  it("an EIP-712 offer altered after signing recovers another signer, which the seller's real receipt then does not match", async () => {
    const { issuer, signer } = freshIssuer("eip712");
    const r = requirement({ amount: "1" });
    const altered = await pick(
      await required([r], issuer, [{ ...r, amount: "1000" }], URL, (o) => ({ ...o, payload: { ...(o.payload as object), amount: "1" } })),
    );
    expect(altered.quote?.offer?.signer).to.not.equal(signer);
  });

  it("recovers every EIP-712 offer's signer as the extension's own verify does, signatures bent every way included", async () => {
    if (process.platform === "linux" && process.arch === "x64") expect(nativeRecovering, "the native binding recovers").to.equal(true);
    const { issuer, signer } = freshIssuer("eip712");
    const r = requirement();
    const offer = (await issuer.issueOffer(URL, { acceptIndex: 0, ...r })) as EIP712SignedOffer;
    const sig = offer.signature;
    const n = BigInt("0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
    const highS = (n - BigInt(`0x${sig.slice(66, 130)}`)).toString(16).padStart(64, "0");
    const v = parseInt(sig.slice(130), 16);
    const bent = [
      sig,
      sig.toUpperCase().replace(/^0X/, "0x"),
      `${sig.slice(0, 130)}${(v - 27).toString(16).padStart(2, "0")}`, // v as 0 or 1
      `${sig.slice(0, 66)}${highS}${v === 27 ? "1c" : "1b"}`, // the same signature with a high s
      `${sig.slice(0, 130)}1d`, // v 29
      `${sig.slice(0, 66)}${"0".repeat(64)}${sig.slice(130)}`, // s = 0
      `0x${"ff".repeat(32)}${sig.slice(66)}`, // r over the order
      sig.slice(0, 128), // short
      `${sig}00`, // long
    ];
    for (const [i, signature] of bent.entries()) {
      const bentOffer = { ...offer, signature };
      const ours = await readOffers(
        { x402Version: 2, resource: { url: URL }, accepts: [r], extensions: { [OFFER_RECEIPT]: { info: { offers: [bentOffer] } } } },
        URL,
      );
      const theirs = await verifyOfferSignatureEIP712(bentOffer).then(
        (v) => v.signer,
        () => null,
      );
      expect(
        ours.offers.map((o) => o.signer),
        `signature ${i}`,
      ).to.deep.equal(theirs === null ? [] : [theirs]);
      if (i < 4) expect(theirs, `signature ${i}`).to.equal(signer);
    }
  });

  it("hashes offers and receipts as the extension does, and leaves to it every payload it does not type alike", async () => {
    const strings = ["", "https://seller.example/r?q=ä", "exact", "eip155:8453", USDC, "😀".repeat(40), "\ud800 lone", "x".repeat(300)];
    const numbers = [0, 1, 1_765_000_000, Number.MAX_SAFE_INTEGER];
    for (const [i, a] of strings.entries()) {
      const b = strings[(i + 3) % strings.length];
      const n = numbers[i % numbers.length];
      const offer = { version: n, resourceUrl: a, scheme: b, network: a, asset: b, payTo: a, amount: b, validUntil: numbers[(i + 1) % 4] };
      const receipt = { version: 1, network: b, resourceUrl: a, payer: b, issuedAt: n, transaction: a };
      expect(offerDigest(offer), `offer ${i}`).to.equal(hashOfferTypedData(offer));
      expect(receiptDigest(receipt), `receipt ${i}`).to.equal(hashReceiptTypedData(receipt));
      expect(receiptDigest({ ...receipt, issuedAt: BigInt(n) })).to.equal(hashReceiptTypedData(receipt));
    }
    const offer = {
      version: 1,
      resourceUrl: URL,
      scheme: "exact",
      network: "eip155:8453",
      asset: USDC,
      payTo: USDC,
      amount: "1",
      validUntil: 9,
    };
    for (const bent of [
      { version: "1" },
      { validUntil: -1 },
      { validUntil: 1.5 },
      { amount: 1 },
      { scheme: undefined },
      { version: 2 ** 60 },
    ]) {
      expect(offerDigest({ ...offer, ...bent }), JSON.stringify(bent)).to.equal(null);
    }
    expect(offerDigest(null)).to.equal(null);
    // The seller's signer takes the precomputed digest only for the types and domain the extension's issuer signs.
    const asked: { types: unknown; domain: unknown; primaryType: string }[] = [];
    const capture = createEIP712OfferReceiptIssuer("did:pkh:eip155:1:0x0", (p) => {
      asked.push(p);
      return Promise.resolve(`0x${"00".repeat(65)}` as const);
    });
    await capture.issueOffer(URL, { acceptIndex: 0, ...requirement() });
    await capture.issueReceipt(URL, USDC, "eip155:8453", "0x");
    expect(asked.map((p) => [JSON.stringify(p.types), JSON.stringify(p.domain)])).to.deep.equal([
      [DIGESTED.Offer.types, DIGESTED.Offer.domain],
      [DIGESTED.Receipt.types, DIGESTED.Receipt.domain],
    ]);
  });

  it("a seller that signs nothing is paid as ever", async () => {
    const r = requirement();
    const { offers, quote } = await pick({ x402Version: 2, resource: { url: URL }, accepts: [r] });
    expect(offers).to.deep.equal({ sent: 0, offers: [] });
    expect(quote?.requirement).to.deep.equal(r);
    expect(quote?.offer).to.equal(null);
  });
});
