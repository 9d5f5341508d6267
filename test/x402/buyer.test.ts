import { expect } from "chai";
import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { BASE_USDC } from "../../src/config";
import { Wallet } from "ethers";
import { readQuote, signPayment, type SellerResponse } from "../../src/x402/buyer";

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

describe("hostile quotes (x402 buyer)", () => {
  it("skips a requirement without the token's EIP-712 domain, with an odd maxTimeoutSeconds, a zero amount or a zero payee", () => {
    const odd: Partial<PaymentRequirements>[] = [
      { extra: undefined },
      { extra: {} },
      { extra: { name: "USD Coin" } },
      { extra: { name: 5, version: "2" } },
      { maxTimeoutSeconds: "0" as unknown as number },
      { maxTimeoutSeconds: "300" as unknown as number },
      { maxTimeoutSeconds: 0 },
      { maxTimeoutSeconds: -5 },
      { maxTimeoutSeconds: 1.5 },
      { maxTimeoutSeconds: undefined },
      { amount: "0" },
      { amount: "-1" },
      { amount: "1e6" },
      { payTo: "0x0000000000000000000000000000000000000000" },
    ];
    for (const over of odd) expect(readQuote(v2Response([requirement(over)]), OPTS), JSON.stringify(over)).to.equal(null);
  });

  it("signs for at most MAX_PAYMENT_VALIDITY_SECONDS whatever the seller asks, and still names the seller's own requirement", async () => {
    const quote = readQuote(v2Response([requirement({ maxTimeoutSeconds: 10 ** 9 })]), OPTS)!;
    const key = Wallet.createRandom();
    const signer = {
      address: key.address as `0x${string}`,
      signTypedData: async (d: {
        domain: Record<string, unknown>;
        types: Record<string, { name: string; type: string }[]>;
        message: Record<string, unknown>;
      }) => {
        const { EIP712Domain: _skip, ...types } = d.types;
        return (await key.signTypedData(d.domain, types, d.message)) as `0x${string}`;
      },
    };
    const now = Math.floor(Date.now() / 1000);
    const signed = await signPayment(signer, quote, 600);
    expect(Number(signed.transfer.validBefore)).to.be.within(now + 590, now + 602);
    expect((signed.payload as { accepted?: unknown }).accepted).to.deep.equal(quote.requirement);
  });
});
