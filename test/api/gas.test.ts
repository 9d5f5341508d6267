import { expect } from "chai";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { ownerKey } from "../helpers/owner";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";
import { GasMeter, type GasUsageDoc } from "../../src/services/gas";
import type { Store } from "../../src/store";

const POLICY = { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "3", allowlist: ["127.0.0.1"] };
/** A mined transaction's receipt that cost `gwei`. */
const receipt = (gwei: number) => ({ gasUsed: BigInt(gwei), gasPrice: 1_000_000_000n });
/** The error a check threw, or null when it let the transaction through. */
const refusal = (p: Promise<void>) =>
  p.then(
    () => null,
    (err: unknown) => err,
  );

describe("operator gas per owner: OWNER_GAS_ALLOWANCE_GWEI and GET /owner/gas", () => {
  let s: Stack;
  let seller: TestSeller;
  before(async () => {
    // One gwei a day: the first deployment goes through (nothing spent yet), then the allowance is spent.
    s = await startStack({ OWNER_GAS_ALLOWANCE_GWEI: "1" });
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 1_000_000n });
  });
  after(async () => {
    await seller?.close();
    await s?.close();
  });

  it("charges every relayed transaction to the owner, refuses more past the allowance (429), and never blocks the kill switch", async () => {
    const owner = randomOwner();
    const key = await ownerKey(s, owner);
    const a = await s.onboard(owner, POLICY);
    await mintUsdc(s, a.agentAddress, 10_000_000n);
    const usage = await s.api("GET", "/owner/gas", { key });
    expect(usage.status).to.equal(200);
    expect(usage.body).to.include({ ownerAddress: owner.address, transactions: 1, allowanceGwei: 1, remainingGwei: 0 });
    expect(usage.body.gasUsed).to.be.within(150_000, 250_000); // the agent's deployment
    expect(usage.body.costGwei).to.be.greaterThan(0);

    const update = await s.api("POST", "/limits", {
      key,
      body: await s.policyBody(owner, a.agentAddress, { ...POLICY, dailyBudget: "30" }, s.now() + 1),
    });
    expectErrorShape(update, 429, "gas_allowance_exceeded");
    const pay = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent: "over the gas allowance" },
    });
    expect(pay.status, JSON.stringify(pay.body)).to.equal(429);
    expect(pay.body.error).to.equal("gas_allowance_exceeded");
    expect(Number(pay.headers.get("retry-after"))).to.be.within(1, 86_400);
    expect(seller.settlements).to.have.length(0);
    // A refusal is kept in the ledger, but not written on-chain at the operator's cost.
    const blocked = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: {
        agentAddress: a.agentAddress,
        serviceUrl: seller.resource.replace("127.0.0.1", "localhost"),
        maxAmount: "2",
        intent: "not allowed",
      },
    });
    expect(blocked.body).to.include({ status: "blocked", reason: "merchant_not_allowed", txHash: null });

    const { signature, timestamp } = await s.signPause(owner, a.agentAddress, true);
    const paused = await s.api("POST", `/agents/${a.agentAddress}/pause`, {
      key,
      body: { paused: true, humanSignature: signature, timestamp },
    });
    expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
    expect((await s.api("GET", "/owner/gas", { key })).body.transactions).to.equal(2);
    expectErrorShape(await s.api("GET", "/owner/gas", { key: a.apiKey }), 403, "forbidden");
  });

  it("two instances' meters: an instance's own charge answers the day's total with the other's charges, and the next check refuses on it", async () => {
    const owner = randomOwner().address;
    const config = { ownerGasAllowanceGwei: 1_000 };
    const [a, b] = [new GasMeter(s.svc.store, config), new GasMeter(s.svc.store, config)];
    await a.check(owner); // nothing spent: A knows 0
    await b.charge(owner, receipt(1_500)); // B spends past the allowance
    await a.charge(owner, receipt(1)); // A's own charge answers 1,501
    expect(await refusal(a.check(owner))).to.include({ code: "gas_allowance_exceeded", status: 429 });
    expect((await a.usage(owner)).transactions).to.equal(2);
  });

  it("a check stands on a total under 10 s old while it leaves more than half the allowance, 1 s otherwise", async () => {
    const config = { ownerGasAllowanceGwei: 1_000 };
    let now = 0;
    const [a, b] = [new GasMeter(s.svc.store, config, () => now), new GasMeter(s.svc.store, config)];
    // A read 0; B then charges the whole allowance and more (faster than any relay could: half of it within 10 s).
    const first = randomOwner().address;
    await a.check(first);
    await b.charge(first, receipt(1_500));
    now = 9_999;
    expect(await refusal(a.check(first)), "stands on its answer of 0").to.equal(null);
    now = 10_000;
    expect(await refusal(a.check(first))).to.include({ code: "gas_allowance_exceeded" });
    // A's own charge answers 600, more than half: a second later, it reads the total again.
    const second = randomOwner().address;
    await a.charge(second, receipt(600));
    await b.charge(second, receipt(500));
    now += 999;
    expect(await refusal(a.check(second)), "stands on its answer of 600").to.equal(null);
    now += 1;
    expect(await refusal(a.check(second))).to.include({ code: "gas_allowance_exceeded" });
    // Exactly half is not more than half: under 1 s only.
    const third = randomOwner().address;
    await a.charge(third, receipt(500));
    await b.charge(third, receipt(600));
    now += 1_000;
    expect(await refusal(a.check(third))).to.include({ code: "gas_allowance_exceeded" });
  });

  it("an answer that arrives late never lowers the total the check stands on, nor dates it from its arrival", async () => {
    const config = { ownerGasAllowanceGwei: 1_000 };
    let now = 0;
    const b = new GasMeter(s.svc.store, config);
    /**
     * A meter on the real store whose gasUsage reads are answered late: each read runs at once, and its answer is held
     * until release() (an answer slow on the wire). `read` resolves once the store has answered.
     */
    const lateAnswers = () => {
      let release!: () => void;
      let answered!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const read = new Promise<void>((r) => (answered = r));
      const store = {
        collection: (name: string) => {
          const docs = s.svc.store.collection<GasUsageDoc>(name);
          return new Proxy(docs, {
            get(target, prop) {
              if (prop === "findOne")
                return async (...args: Parameters<typeof docs.findOne>) => {
                  const doc = await target.findOne(...args);
                  answered();
                  await gate;
                  return doc;
                };
              const value: unknown = Reflect.get(target, prop, target);
              return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
            },
          });
        },
      } as unknown as Store;
      return { meter: new GasMeter(store, config, () => now), read, release };
    };

    // A read of 0 answered after the meter's own charge answered 600 (more than half): 600 stands, under 1 s only.
    const first = randomOwner().address;
    const late = lateAnswers();
    const reading = late.meter.usage(first);
    await late.read;
    await late.meter.charge(first, receipt(600));
    late.release();
    await reading;
    await b.charge(first, receipt(500));
    now = 5_000;
    expect(await refusal(late.meter.check(first)), "stood on the late answer of 0").to.include({ code: "gas_allowance_exceeded" });

    // A read sent at 0 and answered at 9 s is 10 s old at 10 s, not 1 s.
    now = 0;
    const second = randomOwner().address;
    const slow = lateAnswers();
    const checking = slow.meter.check(second);
    await slow.read;
    now = 9_000;
    slow.release();
    await checking;
    await b.charge(second, receipt(1_500));
    now = 10_000;
    expect(await refusal(slow.meter.check(second)), "dated the answer from its arrival").to.include({ code: "gas_allowance_exceeded" });
  });
});
