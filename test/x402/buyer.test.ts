import { expect } from "chai";
import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { BASE_USDC } from "../../src/config";
import { readQuote, type SellerResponse } from "../../src/x402/buyer";

const OPTS = { chainId: 8453, usdcAddress: BASE_USDC };
const PAY_TO = "0x1111111111111111111111111111111111111111";

const requirement = (over: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: "exact",
  network: "eip155:8453",
  asset: BASE_USDC,
  amount: "10000",
  payTo: PAY_TO,
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
  ...over,
});

/** A seller's v2 402: the PAYMENT-REQUIRED header carrying these requirements. */
function v2Response(accepts: PaymentRequirements[]): SellerResponse {
  const paymentRequired: PaymentRequired = {
    x402Version: 2,
    error: "payment required",
    resource: { url: "https://seller.example/resource", description: "test", mimeType: "application/json" },
    accepts,
  };
  return {
    status: 402,
    headers: new Headers({ "PAYMENT-REQUIRED": encodePaymentRequiredHeader(paymentRequired) }),
    body: {},
    url: "https://seller.example/resource",
  };
}

describe("readQuote (x402 buyer)", () => {
  it("picks an exact USDC requirement on this chain signed with EIP-3009 (default or named)", () => {
    const plain = readQuote(v2Response([requirement()]), OPTS);
    expect(plain).to.include({ amount: 10_000n, version: 2 });
    const named = readQuote(v2Response([requirement({ extra: { name: "USD Coin", version: "2", assetTransferMethod: "eip3009" } })]), OPTS);
    expect(named?.requirement.extra).to.deep.include({ assetTransferMethod: "eip3009" });
  });

  it("skips a requirement whose assetTransferMethod is permit2 (or anything but eip3009): no quote", () => {
    for (const method of ["permit2", "PERMIT2", "eip2612", "", 1, null]) {
      const quote = readQuote(v2Response([requirement({ extra: { name: "USD Coin", version: "2", assetTransferMethod: method } })]), OPTS);
      expect(quote, String(method)).to.equal(null);
    }
  });

  it("skips the permit2 requirement and picks the EIP-3009 one offered next to it", () => {
    const permit2 = requirement({ amount: "5000", extra: { name: "USD Coin", version: "2", assetTransferMethod: "permit2" } });
    const eip3009 = requirement({ amount: "10000" });
    const quote = readQuote(v2Response([permit2, eip3009]), OPTS);
    expect(quote).to.not.equal(null);
    expect(quote!.amount).to.equal(10_000n);
    expect(quote!.requirement).to.deep.equal(eip3009);
  });
});
