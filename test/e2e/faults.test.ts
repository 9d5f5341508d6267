import { expect } from "chai";
import hre from "hardhat";
import { Contract, Transaction, Wallet } from "ethers";
import { stackPerFile } from "../helpers/stack";
import { spentToday } from "../helpers/payments";
import {
  payingAgent,
  fundedFacilitator,
  startMisbehavingSeller,
  startV2Seller,
  usdcBalance,
  type MisbehaviourMode,
} from "../helpers/sellers";
import { requestSeller, SellerError } from "../../src/x402/buyer";
import { decodePaymentSignatureHeader } from "@x402/core/http";

const USDC = 1_000_000n;

describe("POST /pay when sellers fail or the payment does not verify", () => {
  const { s, keep } = stackPerFile({ SELLER_TIMEOUT_MS: "800", SELLER_MAX_BYTES: "65536" });

  async function agent() {
    return await payingAgent(s, { funds: 20n * USDC });
  }

  async function payAndExpectNothingMoved(serviceUrl: string) {
    const a = await agent();
    const before = await usdcBalance(s, a.agentAddress);
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl, maxAmount: "5", intent: "fault test" },
    });
    expect(res.status, JSON.stringify(res.body)).to.be.within(400, 599);
    expect(res.status).to.not.equal(500);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(before);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    return { a, res };
  }

  it("a seller failing after the payment header: 502, the payment released on-chain (its signed authorisation dead), the ledger says failed", async () => {
    const seller = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, price: USDC });
    keep(seller);
    const { a, res } = await payAndExpectNothingMoved(seller.resource);
    expect(res.status).to.equal(502);
    expect(res.body).to.include({ error: "upstream_error", status: 502 });
    expect(res.body.message).to.include("released");
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(ledger.body.transactions).to.have.length(1);
    const entry = ledger.body.transactions[0];
    expect(entry).to.include({ status: "failed", reason: "settlement_failed", amount: "1" });
    const policy = s.svc.chain.policyAt(a.policyContract, s.svc.chain.provider);
    expect(await policy.paymentState(entry.paymentId)).to.equal(0n); // released: the record is gone
    const released = await s.svc.chain.provider.getTransactionReceipt(entry.releaseTxHash);
    const events = released!.logs.map((l) => policy.interface.parseLog(l)).filter((e) => e?.name === "PaymentReleased");
    expect(events.map((e) => e!.args.paymentId)).to.deep.equal([entry.paymentId]);
    // The hostile seller kept the signed payment and settles it later with its own facilitator: the wallet refuses.
    expect(seller.paymentHeaders).to.have.length(1);
    const payload = decodePaymentSignatureHeader(seller.paymentHeaders![0]);
    const late = await (await fundedFacilitator(s)).settle(payload, payload.accepted);
    expect(late.success).to.equal(false);
    expect(await s.svc.chain.usdc.authorizationState(a.agentAddress, entry.paymentId)).to.equal(false);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(20n * USDC);
  });

  it("the USDC left the wallet after the balance check: the seller's facilitator refuses it, 502 with its reason, budget released", async () => {
    const seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    keep(seller);
    const a = await payingAgent(s, { funds: USDC });
    // With no USDC the service refuses before any transaction (insufficient_funds): move it out once authorised.
    const selector = s.svc.chain.policyAt(a.policyContract).interface.getFunction("authorizePayment").selector;
    const provider = hre.network.provider as unknown as { request(args: { method: string; params?: unknown[] }): Promise<unknown> };
    const original = provider.request.bind(provider);
    provider.request = async (args) => {
      const result = await original(args);
      if (args.method === "eth_sendRawTransaction" && Transaction.from(String(args.params?.[0])).data.startsWith(selector)) {
        provider.request = original;
        await original({ method: "hardhat_impersonateAccount", params: [a.agentAddress] });
        await original({ method: "hardhat_setBalance", params: [a.agentAddress, "0xde0b6b3a7640000"] });
        const usdc = new Contract(
          s.svc.config.usdcAddress,
          ["function transfer(address,uint256) returns (bool)"],
          await hre.ethers.getSigner(a.agentAddress),
        );
        await (await usdc.transfer(Wallet.createRandom().address, USDC)).wait();
        await original({ method: "hardhat_stopImpersonatingAccount", params: [a.agentAddress] });
      }
      return result;
    };
    let res;
    try {
      res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: "no funds" },
      });
    } finally {
      provider.request = original;
    }
    expect(res.status, JSON.stringify(res.body)).to.equal(502);
    expect(res.body.details.reason).to.match(/insufficient/);
    // The verify made no chain call (the balance read just before covered it: execute.ts): the seller's facilitator
    // refused the payment, and nothing settled.
    expect(seller.hits.paid).to.equal(1);
    expect(
      await s.svc.chain.usdc.authorizationState(
        a.agentAddress,
        (await s.svc.store.payments.findOne({ agentAddress: a.agentAddress }))!.paymentId!,
      ),
    ).to.equal(false);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    const ledger = await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey });
    expect(ledger.body.transactions[0]).to.include({ status: "failed" });
  });

  it("a seller naming another EIP-712 domain for USDC: the signed payment does not verify, is never sent, 502 and the budget released", async () => {
    const seller = await startV2Seller({
      facilitator: await fundedFacilitator(s),
      usdc: s.svc.config.usdcAddress,
      price: USDC,
      extra: { name: "USD Coin (bridged)", version: "2" },
    });
    keep(seller);
    const a = await payingAgent(s, { funds: USDC });
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: "wrong domain" },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(502);
    expect(res.body.details.reason).to.equal("invalid_exact_evm_token_name_mismatch");
    expect(seller.hits.paid, "the signed payment never left").to.equal(0);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(USDC);
  });

  const misbehaviour: [MisbehaviourMode, number, string][] = [
    ["garbage402", 502, "invalid_payment_required"],
    ["hugeBody", 502, "seller_response_too_large"],
    ["redirectPrivate", 502, "seller_redirect_refused"],
    ["slow", 504, "upstream_timeout"],
    ["free200", 422, "payment_not_required"],
    ["http500", 502, "upstream_error"],
  ];
  for (const [mode, status, code] of misbehaviour) {
    it(`a seller that misbehaves (${mode}) gets ${status} ${code} and no value moves`, async () => {
      const seller = await startMisbehavingSeller(mode, { usdc: s.svc.config.usdcAddress, price: USDC });
      keep(seller);
      const { res } = await payAndExpectNothingMoved(seller.resource);
      expect(res.status).to.equal(status);
      expect(res.body).to.include({ error: code, status });
      expect(res.body.message).to.be.a("string").that.is.not.empty;
    });
  }

  for (const mode of ["otherNetwork", "otherToken"] as const) {
    it(`a price in another ${mode === "otherNetwork" ? "network" : "token"} is blocked as unsupported_payment`, async () => {
      const seller = await startMisbehavingSeller(mode, { usdc: s.svc.config.usdcAddress, price: USDC });
      keep(seller);
      const { res } = await payAndExpectNothingMoved(seller.resource);
      expect(res.status).to.equal(422);
      expect(res.body).to.include({ status: "blocked", reason: "unsupported_payment", onchainEvent: null });
    });
  }

  it("refuses sellers on private addresses unless ALLOW_PRIVATE_SELLERS (SSRF)", async () => {
    const opts = {
      timeoutMs: 500,
      maxBytes: 1024,
      allowPrivate: false,
      allowHttp: true,
      chainId: 8453,
      usdcAddress: s.svc.config.usdcAddress,
    };
    for (const url of [
      "http://127.0.0.1:1/x",
      "http://10.1.2.3/x",
      "http://169.254.169.254/latest",
      "http://[::1]:1/x",
      "http://localhost:1/x",
    ]) {
      const err = await requestSeller({ url, method: "GET" }, opts).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, url).to.be.instanceOf(SellerError);
      expect((err as SellerError).code, url).to.equal("unsafe_seller_address");
    }
  });
});
