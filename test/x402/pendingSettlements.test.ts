/**
 * One pending store for every instance (issue 38): SpendGate's facilitators keep the settlements they broadcast and
 * have not seen confirmed in the service's MongoDB (MongoPendingSettlementStore, @x402/core's PendingSettlementStore),
 * so a settle retried on another instance reconciles against the transaction already broadcast and sends nothing new.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { stackPerFile } from "../helpers/stack";
import { fundedFacilitator, mintUsdc } from "../helpers/sellers";
import { eoaPayment, usdcRequirement } from "../helpers/x402Payments";
import { MongoPendingSettlementStore, PENDING_SETTLEMENTS } from "../../src/x402/pendingSettlements";
import type { PendingSettlementDoc } from "../../src/store/documents";

describe("the facilitators' pending settlements, in the service's store", function () {
  this.timeout(60_000);
  const { s } = stackPerFile();
  const rpc = (method: string, params: unknown[] = []) => s.svc.chain.provider.send(method, params);
  const collection = () => s.svc.store.collection<PendingSettlementDoc>(PENDING_SETTLEMENTS);

  /** An instance's facilitator: its own key (funded), the one store, a receipt wait of 300 ms. */
  async function instance() {
    const pendingSettlements = new MongoPendingSettlementStore(collection());
    const facilitator = await fundedFacilitator(s, { confirmationTimeoutMs: 300, pendingSettlements });
    return { facilitator, sent: () => s.svc.chain.provider.getTransactionCount(facilitator.address, "pending") };
  }

  afterEach(() => rpc("evm_setAutomine", [true]));

  it("a settle retried on the other instance reconciles against the transaction the first broadcast, and sends nothing", async () => {
    const [a, b] = [await instance(), await instance()];
    const requirement = usdcRequirement(s.svc.config.usdcAddress, Wallet.createRandom().address, 10_000n);
    const payload = await eoaPayment(requirement, (to) => mintUsdc(s, to, 10_000n));
    expect((await a.facilitator.verify(payload, requirement)).isValid).to.equal(true);

    await rpc("evm_setAutomine", [false]);
    const first = await a.facilitator.settle(payload, requirement);
    expect(first.success).to.equal(false);
    expect(first.errorReason).to.equal("settlement_pending");
    expect(first.transaction).to.match(/^0x[0-9a-f]{64}$/);
    expect(await collection().countDocuments({ txHash: first.transaction })).to.equal(1);

    const retried = await b.facilitator.settle(payload, requirement);
    expect(retried.errorReason, "still pending: the same transaction").to.equal("settlement_pending");
    expect(retried.transaction).to.equal(first.transaction);
    expect(await b.sent(), "the other instance broadcast nothing").to.equal(0);
    expect(await a.sent()).to.equal(1);

    await rpc("hardhat_mine", ["0x2"]);
    const settled = await b.facilitator.settle(payload, requirement);
    expect(settled.success, JSON.stringify(settled)).to.equal(true);
    expect(settled.transaction).to.equal(first.transaction);
    expect(await b.sent()).to.equal(0);
    expect(await collection().countDocuments({ txHash: first.transaction }), "forgotten once final").to.equal(0);
  });

  it("an entry past its time is not read (the TTL index removes it later)", async () => {
    const store = new MongoPendingSettlementStore(collection(), -1);
    await store.set("0xsignature", "0x" + "ab".repeat(32));
    expect(await store.get("0xsignature")).to.equal(undefined);
    const fresh = new MongoPendingSettlementStore(collection());
    await fresh.set("0xsignature", "0x" + "cd".repeat(32));
    expect(await fresh.get("0xsignature")).to.equal("0x" + "cd".repeat(32));
    await fresh.delete("0xsignature");
    expect(await fresh.get("0xsignature")).to.equal(undefined);
  });
});
