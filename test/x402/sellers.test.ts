import { expect } from "chai";
import { Wallet } from "ethers";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { isPaymentRequiredV1 } from "@x402/core/schemas";
import type { PaymentRequired, PaymentRequiredV1 } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { viemAccounts } from "../../src/chain/viem";
import type { InProcessFacilitator } from "../../src/x402/facilitator";
import { stackPerFile } from "../helpers/stack";
import {
  fundedFacilitator,
  mintUsdc,
  startMisbehavingSeller,
  startV1Seller,
  startV2Seller,
  usdcBalance,
  type TestSeller,
} from "../helpers/sellers";

const PRICE = 10_000n; // 0.01 USDC

function newBuyer() {
  const account = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey());
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  return { address: account.address, client, fetch: wrapFetchWithPayment(fetch, client) };
}

describe("test sellers (real x402 over HTTP on the embedded chain)", function () {
  const { s: stack } = stackPerFile({ LOG_LEVEL: "silent" });
  let facilitator: InProcessFacilitator;
  let usdc: string;
  const sellers: TestSeller[] = [];
  const track = <T extends TestSeller>(s: T): T => {
    sellers.push(s);
    return s;
  };

  async function fundedBuyer(units = 1_000_000n) {
    const buyer = newBuyer();
    await mintUsdc(stack, buyer.address, units);
    return buyer;
  }

  before(async function () {
    usdc = stack.svc.config.usdcAddress;
    facilitator = await fundedFacilitator(stack);
  });

  after(async function () {
    await Promise.all(sellers.map((s) => s.close()));
  });

  it("gives the test facilitator its own funded key, not the service's", async function () {
    expect(facilitator.address).to.not.equal(stack.svc.embeddedChain!.facilitator.address);
    expect(await stack.svc.chain.provider.getBalance(facilitator.address)).to.be.greaterThan(0n);
  });

  describe("v2 seller", function () {
    it("answers 402 with a v2 PAYMENT-REQUIRED header for exact USDC on eip155:8453", async function () {
      const seller = track(await startV2Seller({ facilitator, usdc, price: PRICE }));
      for (const method of ["GET", "POST"]) {
        const res = await fetch(seller.resource, { method });
        expect(res.status).to.equal(402);
        const required = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!);
        expect(required.x402Version).to.equal(2);
        expect(required.accepts).to.have.length(1);
        expect(required.accepts[0]).to.deep.include({
          scheme: "exact",
          network: "eip155:8453",
          asset: usdc,
          amount: PRICE.toString(),
          payTo: seller.payTo,
        });
        expect(required.accepts[0].extra).to.include({ name: "USD Coin", version: "2" });
      }
      expect(seller.hits).to.deep.equal({ paid: 0, unpaid: 2 });
    });

    it("is paid by @x402/fetch: 200 with the content, PAYMENT-RESPONSE, balances move by the price", async function () {
      const seller = track(await startV2Seller({ facilitator, usdc, price: PRICE }));
      const buyer = await fundedBuyer();
      const [buyerBefore, payToBefore] = [await usdcBalance(stack, buyer.address), await usdcBalance(stack, seller.payTo)];

      const res = await buyer.fetch(seller.resource);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ data: "paid content", payer: buyer.address });
      const settled = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!);
      expect(settled).to.include({ success: true, network: "eip155:8453", payer: buyer.address });
      expect(settled.transaction).to.match(/^0x[0-9a-f]{64}$/);
      expect(seller.settlements).to.deep.equal([settled.transaction]);
      expect(seller.hits).to.deep.equal({ paid: 1, unpaid: 1 });

      expect(await usdcBalance(stack, buyer.address)).to.equal(buyerBefore - PRICE);
      expect(await usdcBalance(stack, seller.payTo)).to.equal(payToBefore + PRICE);

      const post = await buyer.fetch(seller.resource, { method: "POST", body: "{}" });
      expect(post.status).to.equal(200);
      expect(await usdcBalance(stack, seller.payTo)).to.equal(payToBefore + 2n * PRICE);
    });

    it("refuses a replayed PAYMENT-SIGNATURE with 402 naming the used nonce", async function () {
      const seller = track(await startV2Seller({ facilitator, usdc, price: PRICE }));
      const buyer = await fundedBuyer();
      const first = await fetch(seller.resource);
      const required = decodePaymentRequiredHeader(first.headers.get("PAYMENT-REQUIRED")!);
      const payment = encodePaymentSignatureHeader(await buyer.client.createPaymentPayload(required));

      const paid = await fetch(seller.resource, { headers: { "PAYMENT-SIGNATURE": payment } });
      expect(paid.status).to.equal(200);
      const before = await usdcBalance(stack, buyer.address);

      const replay = await fetch(seller.resource, { headers: { "PAYMENT-SIGNATURE": payment } });
      expect(replay.status).to.equal(402);
      expect(decodePaymentRequiredHeader(replay.headers.get("PAYMENT-REQUIRED")!).error).to.equal("invalid_exact_evm_nonce_already_used");
      expect(await usdcBalance(stack, buyer.address)).to.equal(before);
      expect(seller.settlements).to.have.length(1);
    });

    it("changes its price with setPrice", async function () {
      const seller = track(await startV2Seller({ facilitator, usdc, price: PRICE, payTo: Wallet.createRandom().address }));
      seller.setPrice(25_000n);
      const res = await fetch(seller.resource);
      expect(decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!).accepts[0].amount).to.equal("25000");
      const buyer = await fundedBuyer();
      const before = await usdcBalance(stack, buyer.address);
      expect((await buyer.fetch(seller.resource)).status).to.equal(200);
      expect(await usdcBalance(stack, buyer.address)).to.equal(before - 25_000n);
    });
  });

  describe("v1 seller", function () {
    it("answers 402 with a v1 JSON body (exact, network base)", async function () {
      const seller = track(await startV1Seller({ facilitator, usdc, price: PRICE }));
      const res = await fetch(seller.resource);
      expect(res.status).to.equal(402);
      const body = (await res.json()) as PaymentRequiredV1;
      expect(isPaymentRequiredV1(body)).to.equal(true);
      expect(body.error).to.be.a("string");
      expect(body.accepts[0]).to.deep.include({
        scheme: "exact",
        network: "base",
        maxAmountRequired: PRICE.toString(),
        resource: seller.resource,
        payTo: seller.payTo,
        asset: usdc,
        mimeType: "application/json",
        extra: { name: "USD Coin", version: "2" },
      });
      expect(body.accepts[0].maxTimeoutSeconds).to.be.a("number");
    });

    it("is paid with an x402 client v1 payload in X-PAYMENT: 200, X-PAYMENT-RESPONSE, balances move", async function () {
      const seller = track(await startV1Seller({ facilitator, usdc, price: PRICE }));
      const buyer = await fundedBuyer();
      const challenge = (await (await fetch(seller.resource)).json()) as PaymentRequiredV1;
      const payload = await buyer.client.createPaymentPayload(challenge as unknown as PaymentRequired);
      expect(payload).to.include({ x402Version: 1 });
      const [buyerBefore, payToBefore] = [await usdcBalance(stack, buyer.address), await usdcBalance(stack, seller.payTo)];

      const xPayment = encodePaymentSignatureHeader(payload);
      const res = await fetch(seller.resource, { headers: { "X-PAYMENT": xPayment } });
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ data: "paid content", payer: buyer.address });
      const settled = decodePaymentResponseHeader(res.headers.get("X-PAYMENT-RESPONSE")!);
      expect(settled).to.include({ success: true, network: "base", payer: buyer.address });
      expect(await usdcBalance(stack, buyer.address)).to.equal(buyerBefore - PRICE);
      expect(await usdcBalance(stack, seller.payTo)).to.equal(payToBefore + PRICE);

      const replay = await fetch(seller.resource, { headers: { "X-PAYMENT": xPayment } });
      expect(replay.status).to.equal(402);
      expect(((await replay.json()) as PaymentRequiredV1).error).to.equal("invalid_exact_evm_nonce_already_used");
      expect(seller.hits).to.deep.equal({ paid: 2, unpaid: 1 });
    });

    it("is also paid through @x402/fetch (which speaks v1 from the body)", async function () {
      const seller = track(await startV1Seller({ facilitator, usdc, price: PRICE }));
      const buyer = await fundedBuyer();
      const before = await usdcBalance(stack, seller.payTo);
      const res = await buyer.fetch(seller.resource);
      expect(res.status).to.equal(200);
      expect(await usdcBalance(stack, seller.payTo)).to.equal(before + PRICE);
    });
  });

  describe("misbehaving sellers", function () {
    it("garbage402: 402 with a text body and an undecodable PAYMENT-REQUIRED", async function () {
      const seller = track(await startMisbehavingSeller("garbage402"));
      const res = await fetch(seller.resource);
      expect(res.status).to.equal(402);
      expect(await res.text()).to.not.match(/x402Version/);
      expect(() => decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!)).to.throw();
    });

    it("otherNetwork and otherToken: valid v2 challenges for what we do not pay", async function () {
      const net = track(await startMisbehavingSeller("otherNetwork", { usdc }));
      const netReq = decodePaymentRequiredHeader((await fetch(net.resource)).headers.get("PAYMENT-REQUIRED")!);
      expect(netReq.accepts[0]).to.include({ scheme: "exact", network: "eip155:1" });

      const token = track(await startMisbehavingSeller("otherToken", { usdc }));
      const tokReq = decodePaymentRequiredHeader((await fetch(token.resource)).headers.get("PAYMENT-REQUIRED")!);
      expect(tokReq.accepts[0]).to.include({ scheme: "exact", network: "eip155:8453" });
      expect(tokReq.accepts[0].asset.toLowerCase()).to.not.equal(usdc.toLowerCase());
    });

    it("hugeBody: 402 followed by megabytes of body", async function () {
      const seller = track(await startMisbehavingSeller("hugeBody", { bodyBytes: 4 * 1024 * 1024 }));
      const res = await fetch(seller.resource);
      expect(res.status).to.equal(402);
      expect(res.headers.get("content-length")).to.equal(null);
      expect((await res.arrayBuffer()).byteLength).to.be.greaterThan(4 * 1024 * 1024);
    });

    it("redirectPrivate: 302 to the cloud metadata address", async function () {
      const seller = track(await startMisbehavingSeller("redirectPrivate"));
      const res = await fetch(seller.resource, { redirect: "manual" });
      expect(res.status).to.equal(302);
      expect(res.headers.get("location")).to.equal("http://169.254.169.254/latest");
    });

    it("slow: never answers, and close() still ends at once", async function () {
      const seller = await startMisbehavingSeller("slow");
      const err = await fetch(seller.resource, { signal: AbortSignal.timeout(300) }).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(err?.name).to.equal("TimeoutError");
      const pending = fetch(seller.resource).then(
        () => "answered",
        () => "dropped",
      );
      await new Promise((r) => setTimeout(r, 50));
      const t0 = Date.now();
      await seller.close();
      expect(Date.now() - t0).to.be.lessThan(1_000);
      expect(await pending).to.equal("dropped");
      expect(
        await fetch(seller.resource).then(
          () => "up",
          () => "down",
        ),
      ).to.equal("down");
    });

    it("failAfterPayment: valid 402, then 500 for a paid request without settling", async function () {
      const seller = track(await startMisbehavingSeller("failAfterPayment", { usdc, price: PRICE }));
      const buyer = await fundedBuyer();
      const before = await usdcBalance(stack, buyer.address);
      const first = await fetch(seller.resource);
      expect(first.status).to.equal(402);
      const required = decodePaymentRequiredHeader(first.headers.get("PAYMENT-REQUIRED")!);
      expect(required.accepts[0]).to.include({ asset: usdc, amount: PRICE.toString(), payTo: seller.payTo });
      const payment = encodePaymentSignatureHeader(await buyer.client.createPaymentPayload(required));
      const paid = await fetch(seller.resource, { headers: { "PAYMENT-SIGNATURE": payment } });
      expect(paid.status).to.equal(500);
      expect(await usdcBalance(stack, buyer.address)).to.equal(before);
      expect(seller.hits).to.deep.equal({ paid: 1, unpaid: 1 });
    });

    it("free200 and http500", async function () {
      const free = track(await startMisbehavingSeller("free200"));
      const res = await fetch(free.resource);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ data: "free content" });
      const down = track(await startMisbehavingSeller("http500"));
      expect((await fetch(down.resource, { method: "POST" })).status).to.equal(500);
    });
  });
});
