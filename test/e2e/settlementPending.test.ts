/**
 * x402's `settlement_pending` (issue 38): a stock seller whose facilitator broadcast the settlement and answered
 * before it was mined. The payment is neither failed nor approved: it waits for that transaction, once the chain shows
 * it carries this payment's transfer, and is decided from the chain. Mined: approved with that hash. Dropped: failed,
 * the budget released on-chain. A hash of some other transaction is never counted as a payment.
 */
import { expect } from "chai";
import { encodePaymentResponseHeader } from "@x402/core/http";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { spentToday } from "../helpers/payments";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance } from "../helpers/sellers";
import { listen } from "../helpers/sellerServer";
import type { Facilitator } from "../../src/x402/facilitator";

const USDC = 1_000_000n;
const PRICE = 300_000n;

describe("a seller that answers settlement_pending", function () {
  this.timeout(120_000);
  const { s, keep } = stackPerFile();
  const rpc = (method: string, params: unknown[] = []) => s.svc.chain.provider.send(method, params);

  /** Resolves once the entry of the payment waiting for `hash` has noted it (the buyer is then waiting on the chain). */
  async function noted(hash: string): Promise<void> {
    while (!(await s.svc.store.payments.findOne({ pendingSettlementTx: hash }))) await new Promise((r) => setImmediate(r));
  }

  /**
   * A stock seller whose facilitator settles with the chain's automine off and waits 300 ms for the receipt, so it
   * answers settlement_pending with the hash (the resource server's one retry reconciles against the same
   * transaction); once the buyer waits on that hash, `then` decides what happens to it.
   */
  async function pendingSeller(then: (hash: string) => Promise<void>) {
    const inner = await fundedFacilitator(s, { confirmationTimeoutMs: 300 });
    const broadcasts = new Set<string>();
    let retried = false;
    const facilitator: Facilitator = {
      verify: (p, r) => inner.verify(p, r),
      supported: () => inner.supported(),
      async settle(p, r) {
        await rpc("evm_setAutomine", [false]);
        const out = await inner.settle(p, r);
        if (out.transaction) broadcasts.add(out.transaction);
        if (out.errorReason === "settlement_pending" && retried) void noted(out.transaction).then(() => then(out.transaction));
        retried = true;
        return out;
      },
    };
    const seller = keep(await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: PRICE }));
    return { seller, broadcasts, facilitatorAddress: inner.address };
  }

  async function agent() {
    const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 2n * USDC);
    return a;
  }
  const pay = (a: { agentAddress: string; apiKey: string }, serviceUrl: string) =>
    s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl, maxAmount: "1", intent: "pending settlement" },
    });

  afterEach(() => rpc("evm_setAutomine", [true]));

  it("the transfer mined a few blocks later: approved with that hash, once", async () => {
    const { seller, broadcasts, facilitatorAddress } = await pendingSeller(async () => {
      await rpc("hardhat_mine", ["0x3"]);
      await rpc("evm_setAutomine", [true]);
    });
    const a = await agent();
    const res = await pay(a, seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(broadcasts.size, "the retry reconciled against the one transaction broadcast").to.equal(1);
    const [hash] = [...broadcasts];
    expect(res.body.txHash).to.equal(hash);
    expect(await s.svc.chain.provider.getTransactionCount(facilitatorAddress)).to.equal(1);
    const entry = await s.svc.store.payments.findOne({ txnId: res.body.transactionId });
    expect(entry?.status).to.equal("approved");
    expect(entry?.txHash).to.equal(hash);
    expect(entry?.pendingSettlementTx).to.equal(hash);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(2n * USDC - PRICE);
    expect(await spentToday(s, a.policyContract)).to.equal(PRICE);
  });

  it("the transfer dropped: failed, and the budget released on-chain", async () => {
    const { seller, broadcasts } = await pendingSeller(async (hash) => {
      await rpc("hardhat_dropTransaction", [hash]);
      await rpc("evm_setAutomine", [true]);
    });
    const a = await agent();
    const res = await pay(a, seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(502);
    expect(res.body.message).to.match(/released/);
    const [hash] = [...broadcasts];
    const entry = await s.svc.store.payments.findOne({ agentAddress: a.agentAddress });
    expect(entry?.status).to.equal("failed");
    expect(entry?.pendingSettlementTx).to.equal(hash);
    expect(entry?.releaseTxHash, "released on-chain").to.be.a("string");
    expect(entry?.detail).to.match(/dropped/);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(2n * USDC);
    expect(await s.svc.chain.provider.getTransactionReceipt(hash)).to.equal(null);
  });

  it("a hostile seller naming another transaction as pending: nothing counted, the budget released", async () => {
    const { chain } = s.svc;
    const { receipt: unrelated } = await chain.sendAndWait((o) => chain.usdc.connect(chain.operator).mint(chain.operator.address, 1n, o));
    const pending = encodePaymentResponseHeader({
      success: false,
      errorReason: "settlement_pending",
      transaction: unrelated.hash,
      network: "eip155:8453",
      payer: "0x" + "11".repeat(20),
    });
    const honest = keep(await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: PRICE }));
    // The 402 is the real seller's; the paid request is never settled, and answered "pending" with that hash.
    const liar = keep(
      await listen(async (req, res) => {
        if (req.headers["payment-signature"]) {
          res.writeHead(402, { "Content-Type": "application/json", "PAYMENT-RESPONSE": pending }).end("{}");
          return;
        }
        const r = await fetch(honest.resource);
        res.writeHead(r.status, { "PAYMENT-REQUIRED": r.headers.get("payment-required") ?? "" }).end(await r.text());
      }),
    );
    const a = await agent();
    const res = await pay(a, `${liar.url}/resource`);
    expect(res.status, JSON.stringify(res.body)).to.equal(502);
    const entry = await s.svc.store.payments.findOne({ agentAddress: a.agentAddress });
    expect(entry?.status).to.equal("failed");
    expect(entry?.txHash ?? null).to.equal(null);
    expect(entry?.pendingSettlementTx ?? null, "a hash that is not this transfer is never waited for").to.equal(null);
    expect(entry?.detail).to.match(/not this payment's transfer/);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(2n * USDC);
  });
});
