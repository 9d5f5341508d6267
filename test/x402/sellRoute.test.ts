import { expect } from "chai";
import { Interface, Wallet } from "ethers";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { isPaymentRequiredV1, isPaymentRequiredV2 } from "@x402/core/schemas";
import type { PaymentPayload, PaymentRequired, PaymentRequiredV1, PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fromBaseUnits } from "../../src/amounts";
import { viemAccounts } from "../../src/chain/viem";
import { NETWORKS } from "../../src/chain/networks";
import { AppError } from "../../src/errors";
import { createRemoteFacilitator } from "../../src/x402/facilitator";
import { explorerBase } from "../../src/services/presenters";
import { AgentIntelSeller } from "../../src/x402/seller";
import { stackPerFile } from "../helpers/stack";
import { mintUsdc, usdcBalance } from "../helpers/sellers";

const PATH = "/sell/agent-intel";
const PRICE = 10_000n; // SELL_PRICE default "0.01"
const transferEvent = new Interface(["event Transfer(address indexed from, address indexed to, uint256 value)"]);

function newBuyer() {
  const account = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey());
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  return { address: account.address, client, fetch: wrapFetchWithPayment(fetch, client) };
}

describe("GET|POST /sell/agent-intel (SpendGate as an x402 seller)", function () {
  const { s: stack } = stackPerFile({ LOG_LEVEL: "silent" });
  let usdc: string;
  let payTo: string;
  let url: string;

  async function fundedBuyer(units = 1_000_000n) {
    const buyer = newBuyer();
    await mintUsdc(stack, buyer.address, units);
    return buyer;
  }
  const challenge = async () => {
    const res = await fetch(url);
    return { v2: decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!), v1: (await res.json()) as PaymentRequiredV1 };
  };
  const signV2 = async (buyer: ReturnType<typeof newBuyer>, over: Partial<PaymentRequirements> = {}) => {
    const { v2 } = await challenge();
    const paymentRequired: PaymentRequired = { ...v2, accepts: [{ ...v2.accepts[0], ...over }] };
    return encodePaymentSignatureHeader(await buyer.client.createPaymentPayload(paymentRequired));
  };
  const signV1 = async (buyer: ReturnType<typeof newBuyer>) => {
    const { v1 } = await challenge();
    return encodePaymentSignatureHeader(await buyer.client.createPaymentPayload(v1 as unknown as PaymentRequired));
  };
  const expectRefusal = async (res: Response, reason: string | RegExp) => {
    expect(res.status).to.equal(402);
    const body = (await res.json()) as PaymentRequiredV1;
    expect(isPaymentRequiredV1(body), JSON.stringify(body)).to.equal(true);
    if (reason instanceof RegExp) expect(body.error).to.match(reason);
    else expect(body.error).to.equal(reason);
    const v2 = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!);
    expect(v2.error).to.equal(body.error);
    expect(res.headers.get("X-Service-Amount")).to.equal("0.01");
    return body;
  };

  before(function () {
    usdc = stack.svc.config.usdcAddress;
    payTo = stack.svc.chain.operator.address; // SELL_PAY_TO unset
    url = stack.url + PATH;
  });

  for (const method of ["GET", "POST"]) {
    it(`${method} without payment: 402 with the v1 body, the v2 PAYMENT-REQUIRED header and the X-Service-* headers`, async function () {
      const res = await fetch(url, method === "POST" ? { method, body: "anything", headers: { "Content-Type": "text/plain" } } : {});
      expect(res.status).to.equal(402);
      expect(res.headers.get("X-Service-Amount")).to.equal("0.01");
      expect(res.headers.get("X-Service-Network")).to.equal("base");
      expect(res.headers.get("X-Service-Chain-Id")).to.equal("8453");
      expect(res.headers.get("X-Service-Token")).to.equal(usdc);
      expect(res.headers.get("X-Service-Receiver")).to.equal(payTo);

      const body = (await res.json()) as PaymentRequiredV1;
      expect(isPaymentRequiredV1(body), JSON.stringify(body)).to.equal(true);
      expect(body.x402Version).to.equal(1);
      expect(body.error).to.be.a("string").and.not.empty;
      expect(body.accepts).to.have.length(1);
      expect(body.accepts[0]).to.deep.include({
        scheme: "exact",
        network: "base",
        maxAmountRequired: "10000",
        resource: url,
        payTo,
        asset: usdc,
        mimeType: "application/json",
        extra: { name: "USD Coin", version: "2" },
      });

      const v2 = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!);
      expect(isPaymentRequiredV2(v2), JSON.stringify(v2)).to.equal(true);
      expect(v2.resource.url).to.equal(url);
      expect(v2.accepts).to.deep.equal([
        {
          scheme: "exact",
          network: "eip155:8453",
          asset: usdc,
          amount: "10000",
          payTo,
          maxTimeoutSeconds: 300,
          extra: { name: "USD Coin", version: "2" },
        },
      ]);
    });
  }

  it("is paid by @x402/fetch (v2): the paid resource, PAYMENT-RESPONSE, and balances move by exactly the price", async function () {
    const buyer = await fundedBuyer();
    const [buyerBefore, payToBefore] = [await usdcBalance(stack, buyer.address), await usdcBalance(stack, payTo)];

    const res = await buyer.fetch(url);
    expect(res.status).to.equal(200);
    const settled = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!);
    expect(res.headers.get("X-PAYMENT-RESPONSE")).to.equal(null);
    expect(settled).to.include({ success: true, network: "eip155:8453", payer: buyer.address });
    const body = await res.json();
    const buyerAfter = buyerBefore - PRICE;
    expect(body).to.deep.equal({
      agent: { address: buyer.address, network: "base", chainId: 8453 },
      portfolio: {
        totalValueUsd: fromBaseUnits(buyerAfter),
        tokens: [
          { symbol: "USDC", address: usdc, balance: fromBaseUnits(buyerAfter), valueUsd: fromBaseUnits(buyerAfter) },
          { symbol: "ETH", balance: "0.0" },
        ],
      },
      payment: {
        status: "settled",
        txHash: settled.transaction,
        network: "base",
        token: "USDC",
        amount: "0.01",
        payer: buyer.address,
        explorer: `${stack.url}/dev/explorer/tx/${settled.transaction}`,
      },
    });

    expect(await usdcBalance(stack, buyer.address)).to.equal(buyerAfter);
    expect(await usdcBalance(stack, payTo)).to.equal(payToBefore + PRICE);
    const receipt = await stack.svc.chain.provider.getTransactionReceipt(settled.transaction);
    expect(receipt?.status).to.equal(1);
    const transfers = receipt!.logs
      .filter((l) => l.address.toLowerCase() === usdc.toLowerCase())
      .map((l) => transferEvent.parseLog(l))
      .filter((l) => l?.name === "Transfer")
      .map((l) => [l!.args.from, l!.args.to, l!.args.value]);
    expect(transfers).to.deep.equal([[buyer.address, payTo, PRICE]]);
  });

  it("is paid the same way on POST", async function () {
    const buyer = await fundedBuyer();
    const before = await usdcBalance(stack, payTo);
    const res = await buyer.fetch(url, {
      method: "POST",
      body: JSON.stringify({ q: "intel" }),
      headers: { "Content-Type": "application/json" },
    });
    expect(res.status).to.equal(200);
    const body = await res.json();
    expect(body.payment).to.include({ status: "settled", payer: buyer.address, amount: "0.01" });
    expect(await usdcBalance(stack, payTo)).to.equal(before + PRICE);
  });

  it("accepts a v1 X-PAYMENT payload and answers X-PAYMENT-RESPONSE; its replay is refused with the facilitator's reason", async function () {
    const buyer = await fundedBuyer();
    const xPayment = await signV1(buyer);
    const [buyerBefore, payToBefore] = [await usdcBalance(stack, buyer.address), await usdcBalance(stack, payTo)];

    const res = await fetch(url, { headers: { "X-PAYMENT": xPayment } });
    expect(res.status).to.equal(200);
    expect(res.headers.get("PAYMENT-RESPONSE")).to.equal(null);
    const settled = decodePaymentResponseHeader(res.headers.get("X-PAYMENT-RESPONSE")!);
    expect(settled).to.include({ success: true, network: "base", payer: buyer.address });
    const body = await res.json();
    expect(body.agent).to.deep.equal({ address: buyer.address, network: "base", chainId: 8453 });
    expect(body.payment).to.include({ txHash: settled.transaction, amount: "0.01" });
    expect(await usdcBalance(stack, buyer.address)).to.equal(buyerBefore - PRICE);
    expect(await usdcBalance(stack, payTo)).to.equal(payToBefore + PRICE);

    await expectRefusal(await fetch(url, { method: "POST", headers: { "X-PAYMENT": xPayment } }), "invalid_exact_evm_nonce_already_used");
    expect(await usdcBalance(stack, buyer.address)).to.equal(buyerBefore - PRICE);
  });

  it("refuses a replayed v2 PAYMENT-SIGNATURE with 402 and moves nothing", async function () {
    const buyer = await fundedBuyer();
    const payment = await signV2(buyer);
    expect((await fetch(url, { headers: { "PAYMENT-SIGNATURE": payment } })).status).to.equal(200);
    const before = await usdcBalance(stack, buyer.address);
    await expectRefusal(await fetch(url, { headers: { "PAYMENT-SIGNATURE": payment } }), "invalid_exact_evm_nonce_already_used");
    expect(await usdcBalance(stack, buyer.address)).to.equal(before);
  });

  it("settles one of two concurrent copies of the same payment and refuses the other", async function () {
    const buyer = await fundedBuyer();
    const payment = await signV2(buyer);
    const before = await usdcBalance(stack, buyer.address);
    const answers = await Promise.all([1, 2].map(() => fetch(url, { headers: { "PAYMENT-SIGNATURE": payment } })));
    expect(answers.map((r) => r.status).sort()).to.deep.equal([200, 402]);
    expect(await usdcBalance(stack, buyer.address)).to.equal(before - PRICE);
  });

  it("answers garbage payment headers with 402 and a reason, never 500", async function () {
    const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64");
    const cases: [Record<string, string>, string][] = [
      [{ "PAYMENT-SIGNATURE": "garbage!!!" }, "invalid_payload"],
      [{ "X-PAYMENT": "bm90IGpzb24=" }, "invalid_payload"], // base64 of "not json"
      [{ "X-PAYMENT": b64({ hello: 1 }) }, "invalid_x402_version"],
      [{ "X-PAYMENT": b64({ x402Version: 3, payload: {} }) }, "invalid_x402_version"],
      [{ "PAYMENT-SIGNATURE": b64({ x402Version: 2, payload: {} }) }, "invalid_payload"],
      [{ "X-PAYMENT": b64({ x402Version: 1, scheme: "exact", network: "base", payload: {} }) }, "invalid_payload"],
      [{ "X-PAYMENT": b64({ x402Version: 1, scheme: "upto", network: "base", payload: {} }) }, "unsupported_scheme"],
      [{ "X-PAYMENT": b64({ x402Version: 1, scheme: "exact", network: "ethereum", payload: {} }) }, "invalid_network"],
      [{ "X-PAYMENT": b64("null") }, "invalid_x402_version"],
      [{ "PAYMENT-SIGNATURE": "A".repeat(9_000) }, "invalid_payload"],
    ];
    for (const [headers, reason] of cases) {
      for (const method of ["GET", "POST"]) {
        const res = await fetch(url, { method, headers });
        const body = await expectRefusal(res, reason);
        expect(body.accepts[0].payTo).to.equal(payTo);
      }
    }
  });

  it("refuses a malformed EIP-3009 authorization or signature with 402 invalid_payload before the facilitator, never 5xx", async function () {
    const buyer = await fundedBuyer();
    const before = await usdcBalance(stack, buyer.address);
    const { v2 } = await challenge();
    const signed = await buyer.client.createPaymentPayload(v2);
    const logsBefore = stack.logs.length;
    const tamper = (auth: Record<string, unknown>, signature?: unknown): string => {
      const inner = signed.payload as { signature: string; authorization: Record<string, unknown> };
      const payload = { ...inner, authorization: { ...inner.authorization, ...auth }, ...(signature !== undefined ? { signature } : {}) };
      return encodePaymentSignatureHeader({ ...signed, payload });
    };
    const cases: [string, string][] = [
      ["validAfter not numeric", tamper({ validAfter: "soon" })],
      ["validAfter a number", tamper({ validAfter: 0 })],
      ["validAfter missing", tamper({ validAfter: undefined })],
      ["validBefore not numeric", tamper({ validBefore: "0x10" })],
      ["validBefore negative", tamper({ validBefore: "-1" })],
      ["validBefore above uint256", tamper({ validBefore: "9".repeat(78) })],
      ["value not numeric", tamper({ value: "1e4" })],
      ["nonce not hex", tamper({ nonce: "0x" + "zz".repeat(32) })],
      ["nonce too short", tamper({ nonce: "0x1234" })],
      ["nonce without 0x", tamper({ nonce: "ab".repeat(32) })],
      ["signature not a string", tamper({}, 12345)],
      ["signature not hex", tamper({}, "0xnot-a-signature")],
      ["signature empty", tamper({}, "0x")],
      ["signature missing", tamper({}, null)],
    ];
    for (const [what, header] of cases) {
      for (const method of ["GET", "POST"]) {
        const res = await fetch(url, { method, headers: { "PAYMENT-SIGNATURE": header } });
        expect(res.status, `${what} (${method})`).to.equal(402);
        const body = await expectRefusal(res, "invalid_payload");
        expect(body.accepts[0].payTo).to.equal(payTo);
      }
    }
    expect(stack.logs.slice(logsBefore).filter((l) => l.includes("facilitator unreachable"))).to.deep.equal([]);
    expect(await usdcBalance(stack, buyer.address)).to.equal(before);
    // The untouched payment still pays.
    expect((await fetch(url, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(signed) } })).status).to.equal(200);
  });

  it("refuses a signed payment for another amount, payee, asset or network before settling", async function () {
    const buyer = await fundedBuyer();
    const before = await usdcBalance(stack, buyer.address);
    const wrong: [Partial<PaymentRequirements>, string][] = [
      [{ amount: "1" }, "invalid_payment_requirements"],
      [{ amount: "20000" }, "invalid_payment_requirements"],
      [{ payTo: Wallet.createRandom().address }, "invalid_payment_requirements"],
      [{ network: "eip155:84532", asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" }, "invalid_network"],
    ];
    for (const [over, reason] of wrong) {
      await expectRefusal(await fetch(url, { headers: { "PAYMENT-SIGNATURE": await signV2(buyer, over) } }), reason);
    }

    // The accepted echo says the right thing, but the signed authorisation pays someone else.
    const { v2 } = await challenge();
    const honest = await buyer.client.createPaymentPayload({
      ...v2,
      accepts: [{ ...v2.accepts[0], payTo: Wallet.createRandom().address }],
    });
    const lying: PaymentPayload = { ...honest, accepted: v2.accepts[0] };
    await expectRefusal(
      await fetch(url, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(lying) } }),
      "invalid_exact_evm_recipient_mismatch",
    );
    expect(await usdcBalance(stack, buyer.address)).to.equal(before);
  });

  it("passes on the facilitator's reason for a buyer without funds", async function () {
    const buyer = newBuyer();
    await expectRefusal(
      await fetch(url, { headers: { "PAYMENT-SIGNATURE": await signV2(buyer) } }),
      "invalid_exact_evm_insufficient_balance",
    );
  });

  it("answers 502 upstream_error, never 500, when the facilitator cannot be reached", async function () {
    // A real remote facilitator client aimed at a port that just closed.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { config, chain } = stack.svc;
    const seller = new AgentIntelSeller({ price: config.sellPrice, payTo }, [
      {
        network: NETWORKS.base,
        usdcAddress: usdc,
        explorerUrl: explorerBase(stack.svc.services.ctx),
        facilitator: createRemoteFacilitator({ url: `http://127.0.0.1:${port}`, timeoutMs: 2_000 }),
        chain: { holdings: async (a) => ({ usdc: await chain.usdc.balanceOf(a), eth: await chain.provider.getBalance(a) }) },
      },
    ]);
    const buyer = await fundedBuyer();
    const before = await usdcBalance(stack, buyer.address);
    const err = await seller.handle({ resourceUrl: url, paymentSignature: await signV2(buyer) }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(AppError);
    expect(err).to.include({ status: 502, code: "upstream_error" });
    expect(await usdcBalance(stack, buyer.address)).to.equal(before);
  });
});
