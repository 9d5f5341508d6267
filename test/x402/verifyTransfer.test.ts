/**
 * The verify step before a signed payment leaves (src/x402/verifyTransfer.ts), on the real chain with a real agent
 * wallet and its real signature: the facilitator's field checks, and the settlement's simulation, which the wallet
 * refuses until its policy authorised the transfer. An authorised transfer verifying is what every paid e2e test does.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { mintUsdc } from "../helpers/sellers";
import { USDC_EXTRA } from "../helpers/sellerServer";
import type { Quote, SignedPayment } from "../../src/x402/buyer";
import { VERIFY_REASONS, verifyKnown, verifyTransfer } from "../../src/x402/verifyTransfer";

describe("verifyTransfer: the signed payment's check before it leaves", function () {
  this.timeout(60_000);
  const { s } = stackPerFile();
  let quote: Quote;
  let signed: SignedPayment;

  before(async () => {
    const ag = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, ag.agentAddress, 5_000_000n);
    const requirement = {
      scheme: "exact",
      network: "eip155:8453",
      amount: "1000000",
      asset: s.svc.config.usdcAddress,
      payTo: Wallet.createRandom().address,
      maxTimeoutSeconds: 300,
      extra: USDC_EXTRA,
    } as PaymentRequirements;
    const paymentRequired = { x402Version: 2, resource: { url: "http://127.0.0.1/x" }, accepts: [requirement] } as PaymentRequired;
    quote = { paymentRequired, requirement, amount: 1_000_000n, version: 2, scheme: "exact" };
    const agent = (await s.svc.store.agents.findOne({ address: ag.agentAddress }))!;
    signed = await s.svc.services.payments.sign(agent, quote);
  });

  /** The signed payment with some of its authorisation's fields changed. */
  const tampered = (fields: Record<string, string>): SignedPayment => {
    const inner = signed.payload.payload as { authorization: Record<string, string> };
    return { ...signed, payload: { ...signed.payload, payload: { ...inner, authorization: { ...inner.authorization, ...fields } } } };
  };

  it("refuses a recipient or an amount other than the requirement's", async () => {
    expect(await verifyTransfer(s.svc.chain, quote, tampered({ to: Wallet.createRandom().address }))).to.include({
      isValid: false,
      invalidReason: VERIFY_REASONS.recipient,
    });
    expect(await verifyTransfer(s.svc.chain, quote, tampered({ value: "999999" }))).to.include({
      isValid: false,
      invalidReason: VERIFY_REASONS.value,
    });
  });

  it("refuses a transfer that expires within seconds, or that is not valid yet", async () => {
    const validBefore = Number((signed.payload.payload as { authorization: { validBefore: string } }).authorization.validBefore);
    expect(await verifyTransfer(s.svc.chain, quote, signed, (validBefore - 3) * 1000)).to.include({
      invalidReason: VERIFY_REASONS.validBefore,
    });
    const now = Date.now();
    expect(await verifyTransfer(s.svc.chain, quote, tampered({ validAfter: String(Math.floor(now / 1000) + 60) }), now)).to.include({
      invalidReason: VERIFY_REASONS.validAfter,
    });
  });

  it("refuses a requirement without its token's EIP-712 domain", async () => {
    const bare = { ...quote, requirement: { ...quote.requirement, extra: {} } };
    expect(await verifyTransfer(s.svc.chain, bare, signed)).to.include({ invalidReason: VERIFY_REASONS.missingDomain });
  });

  it("simulates the settlement: a transfer the policy never authorised fails there (the wallet refuses its signature)", async () => {
    const answer = await verifyTransfer(s.svc.chain, quote, signed);
    expect(answer).to.include({ isValid: false, invalidReason: VERIFY_REASONS.simulation });
    expect(answer.invalidMessage).to.be.a("string");
  });

  it("verifyKnown, for a transfer whose authorisation landed and whose USDC was read just before: the same fields and the token's domain, with no simulation", async () => {
    expect(await verifyKnown(s.svc.chain, quote, tampered({ to: Wallet.createRandom().address }))).to.include({
      isValid: false,
      invalidReason: VERIFY_REASONS.recipient,
    });
    const renamed = { ...quote, requirement: { ...quote.requirement, extra: { ...USDC_EXTRA, name: "USD Coin (bridged)" } } };
    expect(await verifyKnown(s.svc.chain, renamed, signed)).to.include({ isValid: false, invalidReason: VERIFY_REASONS.nameMismatch });
    const reversioned = { ...quote, requirement: { ...quote.requirement, extra: { ...USDC_EXTRA, version: "1" } } };
    expect(await verifyKnown(s.svc.chain, reversioned, signed)).to.include({
      isValid: false,
      invalidReason: VERIFY_REASONS.versionMismatch,
    });
    // Not authorised here: only the simulation would say so, and verifyKnown is for transfers the chain authorised.
    expect(await verifyTransfer(s.svc.chain, quote, signed)).to.include({ isValid: false });
    expect(await verifyKnown(s.svc.chain, quote, signed)).to.include({ isValid: true });
  });
});
