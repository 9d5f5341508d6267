/**
 * /sell/agent-intel signs what it offers and what it delivered (x402 offer-receipt, EIP-712, with a key of its own):
 * the stock @x402/extensions functions verify its offers, and accept the receipt it gives a stock client that paid it.
 */
import { expect } from "chai";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import {
  type EIP712SignedOffer,
  type EIP712SignedReceipt,
  decodeSignedOffers,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureEIP712,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureEIP712,
} from "@x402/extensions/offer-receipt";
import { wrapFetchWithPayment } from "@x402/fetch";
import { viemAccounts } from "../../src/chain/viem";
import { SellerSignatures, sellerSigningKey } from "../../src/x402/sellerSignatures";
import { randomOwner, stackPerFile } from "../helpers/stack";
import { mintUsdc } from "../helpers/sellers";

describe("/sell/agent-intel: signed offers and receipts", function () {
  this.timeout(60_000);
  const { s } = stackPerFile({ LOG_LEVEL: "silent" });
  const url = () => `${s.url}/sell/agent-intel`;
  const sellerKeyAddress = () => new SellerSignatures(sellerSigningKey(s.svc.config.walletEncryptionKey)).address;

  it("its 402 carries an EIP-712 offer of each requirement, signed by its own key (not the operator's or the facilitator's)", async () => {
    const res = await fetch(url());
    expect(res.status).to.equal(402);
    const paymentRequired = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!);
    const offers = extractOffersFromPaymentRequired(paymentRequired);
    expect(offers).to.have.length(paymentRequired.accepts.length);
    const { signer, payload } = await verifyOfferSignatureEIP712(offers[0] as EIP712SignedOffer);
    expect(signer).to.equal(sellerKeyAddress());
    expect(signer).to.not.equal(s.svc.chain.operator.address);
    expect(payload.resourceUrl).to.equal(url());
    expect(findAcceptsObjectFromSignedOffer(offers[0], paymentRequired.accepts)).to.deep.equal(paymentRequired.accepts[0]);
    // The v1 body carries the same offers.
    const v1 = (await res.json()) as { extensions?: unknown };
    expect(v1.extensions).to.deep.equal(paymentRequired.extensions);
  });

  it("a stock client that paid it gets a receipt the stock verifyReceiptMatchesOffer accepts, signed by the offer's key", async () => {
    const account = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey());
    await mintUsdc(s, account.address, 1_000_000n);
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });

    const unpaid = await fetch(url());
    const [offer] = decodeSignedOffers(
      extractOffersFromPaymentRequired(decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED")!)),
    );
    const paid = await wrapFetchWithPayment(fetch, client)(url());
    expect(paid.status).to.equal(200);
    const receipt = extractReceiptFromResponse(paid);
    expect(receipt?.format).to.equal("eip712");
    expect(verifyReceiptMatchesOffer(receipt!, offer, [account.address])).to.equal(true);
    const { signer, payload } = await verifyReceiptSignatureEIP712(receipt as EIP712SignedReceipt);
    expect(signer).to.equal((await verifyOfferSignatureEIP712(offer.signedOffer as EIP712SignedOffer)).signer);
    expect(payload.payer).to.equal(account.address);
    expect(payload.transaction).to.equal(((await paid.json()) as { payment: { txHash: string } }).payment.txHash);
  });

  it("SpendGate's own buyer paying it records the verified receipt", async () => {
    const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 1_000_000n);
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: url(), maxAmount: "1", intent: "own seller" },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    const entry = (ledger.body.transactions as { id: string; receipt: unknown }[]).find((t) => t.id === res.body.transactionId);
    expect(entry?.receipt).to.deep.include({ signer: sellerKeyAddress(), verified: true });
  });
});
