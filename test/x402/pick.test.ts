/**
 * pickQuote across schemes: the caller's order first, and only requirements SpendGate can pay safely. A hostile
 * seller's odd terms (a withdraw delay that would lock a deposit for years, no receiver authorizer to refund with, an
 * upto ceiling no facilitator is named for, a channel in x402 v1, the payer itself as payee) are not picked.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import type { PaymentRequired } from "@x402/core/types";
import { pickQuote } from "../../src/x402/pick";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const PAYER = Wallet.createRandom().address;
const OPTS = { chainId: 8453, usdcAddress: USDC, payer: PAYER };
const DOMAIN = { name: "USD Coin", version: "2" };

function offer(scheme: string, extra: Record<string, unknown>, over: Record<string, unknown> = {}) {
  return {
    scheme,
    network: "eip155:8453",
    asset: USDC,
    amount: "1000",
    payTo: Wallet.createRandom().address,
    maxTimeoutSeconds: 60,
    extra,
    ...over,
  };
}
const exact = () => offer("exact", DOMAIN);
const upto = (extra: Record<string, unknown> = { facilitatorAddress: Wallet.createRandom().address }) => offer("upto", extra);
const batch = (extra: Record<string, unknown> = {}) =>
  offer("batch-settlement", { ...DOMAIN, receiverAuthorizer: Wallet.createRandom().address, withdrawDelay: 900, ...extra });
const required = (accepts: unknown[], x402Version = 2) =>
  ({ x402Version, resource: { url: "https://s.example/r" }, accepts }) as unknown as PaymentRequired;

describe("pickQuote: which scheme, and which requirements are payable", () => {
  it("takes the first scheme of the caller's order the seller offers (default: batch-settlement, upto, exact)", () => {
    const all = required([exact(), upto(), batch()]);
    expect(pickQuote(all, OPTS)?.scheme).to.equal("batch-settlement");
    expect(pickQuote(all, { ...OPTS, schemes: ["exact", "upto"] })?.scheme).to.equal("exact");
    expect(pickQuote(all, { ...OPTS, schemes: ["upto"] })?.scheme).to.equal("upto");
    expect(pickQuote(required([exact()]), { ...OPTS, schemes: ["upto", "batch-settlement"] })).to.equal(null);
  });

  it("refuses channels whose terms would lock a deposit or could not be refunded", () => {
    for (const extra of [
      { withdrawDelay: 100 * 365 * 24 * 3600 },
      { withdrawDelay: 60 },
      { withdrawDelay: "900" },
      { receiverAuthorizer: "0x0000000000000000000000000000000000000000" },
      { receiverAuthorizer: undefined },
      { assetTransferMethod: "permit2" },
      { name: undefined },
    ]) {
      expect(pickQuote(required([batch(extra)]), OPTS), JSON.stringify(extra)).to.equal(null);
    }
    expect(pickQuote(required([batch({ withdrawDelay: 30 * 24 * 3600 })]), OPTS)?.scheme).to.equal("batch-settlement");
  });

  it("refuses an upto ceiling with no facilitator named, any scheme but exact in x402 v1, and the payer as payee", () => {
    expect(pickQuote(required([upto({})]), OPTS)).to.equal(null);
    expect(pickQuote(required([upto({ facilitatorAddress: "0x12" })]), OPTS)).to.equal(null);
    const v1 = { ...upto(), network: "base", maxAmountRequired: "1000" };
    expect(pickQuote(required([v1], 1), OPTS)).to.equal(null);
    expect(pickQuote(required([batch({}), upto()].map((r) => ({ ...r, payTo: PAYER }))), OPTS)).to.equal(null);
  });
});
