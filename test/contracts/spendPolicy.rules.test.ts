import { expect } from "chai";
import hre from "hardhat";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import {
  authorizedArgs,
  ALLOWLIST,
  DEFAULT_POLICY,
  NO_APPROVAL,
  paymentId,
  policyFixture,
  proofFor,
  usdc,
  transferOf,
  blockedArgs,
} from "../helpers/policyFixture";
import { ANY_PAYEE } from "../../src/policy/allowlist";

/** Where the authorised transfers pay (any address but the wallet). */
const PAYEE = "0x00000000000000000000000000000000000bee01";

const DAY = 86_400;
const Decision = { Allow: 0n, RequiresApproval: 1n, Block: 2n };

describe("SpendPolicy rules", function () {
  describe("per-transaction limit", function () {
    it("authorises a payment equal to perTxLimit", async function () {
      const { policy, agent, pay, setPolicy } = await loadFixture(policyFixture);
      await setPolicy({ approvalThreshold: DEFAULT_POLICY.perTxLimit });
      const id = paymentId();
      await expect(pay(usdc(5), "api.example.com", { id }))
        .to.emit(policy, "PaymentAuthorized")
        .withArgs(...authorizedArgs(id, agent, "api.example.com", usdc(5)));
      expect(await policy.paymentState(id)).to.equal(1n);
    });

    it("blocks one unit above perTxLimit with reason 2, without reverting or storing anything", async function () {
      const { policy, agent, pay, setPolicy } = await loadFixture(policyFixture);
      await setPolicy({ approvalThreshold: DEFAULT_POLICY.perTxLimit });
      const id = paymentId();
      const amount = usdc(5) + 1n;
      await expect(pay(amount, "api.example.com", { id }))
        .to.emit(policy, "PaymentBlocked")
        .withArgs(...blockedArgs(id, agent, "api.example.com", amount, 2))
        .and.not.to.emit(policy, "PaymentAuthorized");
      expect(await policy.paymentState(id)).to.equal(0n);
      expect(await policy.spentToday()).to.equal(0n);
    });
  });

  describe("daily budget", function () {
    it("authorises payments adding up to exactly the daily budget, then blocks one unit more with reason 3", async function () {
      const { policy, agent, pay } = await loadFixture(policyFixture);
      // dailyBudget 12 = 3 + 3 + 3 + 3 (each at the approval threshold).
      for (let i = 1; i <= 4; i++) {
        await expect(pay(usdc(3)))
          .to.emit(policy, "PaymentAuthorized")
          .withArgs(...authorizedArgs(anyValue, agent, "api.example.com", usdc(3), usdc(3 * i)));
      }
      expect(await policy.spentToday()).to.equal(usdc(12));
      expect(await policy.remainingDailyBudget()).to.equal(0n);
      const id = paymentId();
      await expect(pay(1n, "api.example.com", { id }))
        .to.emit(policy, "PaymentBlocked")
        .withArgs(...blockedArgs(id, agent, "api.example.com", 1n, 3));
      expect(await policy.spentToday()).to.equal(usdc(12));
    });

    it("blocks a payment that would cross the budget even when it is under perTxLimit", async function () {
      const { policy, pay } = await loadFixture(policyFixture);
      await pay(usdc(3));
      await pay(usdc(3));
      await pay(usdc(3));
      expect(await policy.remainingDailyBudget()).to.equal(usdc(3));
      const [ok, reason] = await payStatic(policy, usdc(3) + 1n);
      expect([ok, reason]).to.deep.equal([false, 3n]);
    });

    it("starts a new day at 00:00 UTC: yesterday's spend no longer counts", async function () {
      const { policy, agent, pay } = await loadFixture(policyFixture);
      const dayStart = Math.floor((await time.latest()) / DAY) * DAY;
      const validBefore = BigInt(dayStart + DAY + 600);
      await time.setNextBlockTimestamp(dayStart + DAY - 10);
      for (let i = 0; i < 4; i++) await pay(usdc(3), "api.example.com", { validBefore });
      expect(await policy.spentToday()).to.equal(usdc(12));
      await expect(pay(1n, "api.example.com", { validBefore })).to.emit(policy, "PaymentBlocked");

      await time.setNextBlockTimestamp(dayStart + DAY);
      await expect(pay(usdc(3), "api.example.com", { validBefore }))
        .to.emit(policy, "PaymentAuthorized")
        .withArgs(...authorizedArgs(anyValue, agent, "api.example.com", usdc(3)));
      expect(await policy.spentToday()).to.equal(usdc(3));
    });

    it("reports nothing spent once the day has moved on, before any payment of the new day", async function () {
      const { policy, pay } = await loadFixture(policyFixture);
      await pay(usdc(3));
      expect(await policy.spentToday()).to.equal(usdc(3));
      await time.increase(DAY);
      expect(await policy.spentToday()).to.equal(0n);
      expect(await policy.remainingDailyBudget()).to.equal(DEFAULT_POLICY.dailyBudget);
    });

    it("reports no remaining budget when the owner lowers the budget below today's spend", async function () {
      const { policy, pay, setPolicy } = await loadFixture(policyFixture);
      await pay(usdc(3));
      await pay(usdc(3));
      await setPolicy({ dailyBudget: usdc(4) });
      expect(await policy.remainingDailyBudget()).to.equal(0n);
      expect((await payStatic(policy, 1n))[1]).to.equal(3n);
    });
  });

  describe("approval threshold", function () {
    it("authorises a payment equal to the threshold without an approval", async function () {
      const { policy, pay } = await loadFixture(policyFixture);
      await expect(pay(DEFAULT_POLICY.approvalThreshold)).to.emit(policy, "PaymentAuthorized");
    });

    it("blocks one unit above the threshold without an approval with reason 5", async function () {
      const { policy, agent, pay } = await loadFixture(policyFixture);
      const id = paymentId();
      const amount = DEFAULT_POLICY.approvalThreshold + 1n;
      await expect(pay(amount, "api.example.com", { id }))
        .to.emit(policy, "PaymentBlocked")
        .withArgs(...blockedArgs(id, agent, "api.example.com", amount, 5));
      expect(await policy.spentToday()).to.equal(0n);
    });
  });

  describe("pause", function () {
    it("blocks every payment with reason 4 while paused, and allows them again once resumed", async function () {
      const { policy, agent, pay, setPaused } = await loadFixture(policyFixture);
      await setPaused(true);
      expect(await policy.paused()).to.equal(true);
      for (const [amount, merchant] of [
        [1n, "api.example.com"],
        [usdc(4), "x.data.io"],
        [usdc(100), "unknown.com"],
      ] as const) {
        const id = paymentId();
        await expect(pay(amount, merchant, { id }))
          .to.emit(policy, "PaymentBlocked")
          .withArgs(...blockedArgs(id, agent, merchant, amount, 4));
      }
      const { leaf, proof } = proofFor(ALLOWLIST, "api.example.com");
      expect(await policy.checkPayment("api.example.com", leaf, proof, ANY_PAYEE, 1n)).to.deep.equal([Decision.Block, 4n]);

      await setPaused(false);
      expect(await policy.paused()).to.equal(false);
      await expect(pay(1n)).to.emit(policy, "PaymentAuthorized");
    });
  });

  describe("rule order", function () {
    it("reports paused before merchant, merchant before per-tx, per-tx before daily, daily before approval", async function () {
      const { policy, pay, setPaused } = await loadFixture(policyFixture);
      // Spend 9 of 12 so that 4 is over the budget and over the threshold.
      await pay(usdc(3));
      await pay(usdc(3));
      await pay(usdc(3));
      expect((await payStatic(policy, usdc(4)))[1]).to.equal(3n); // daily wins over approval
      expect((await payStatic(policy, usdc(6)))[1]).to.equal(2n); // per-tx wins over daily
      expect((await payStatic(policy, usdc(6), "evil.com"))[1]).to.equal(1n); // merchant wins over per-tx
      await setPaused(true);
      expect((await payStatic(policy, usdc(6), "evil.com"))[1]).to.equal(4n); // paused wins over all
    });
  });

  describe("checkPayment", function () {
    it("agrees with authorizePayment on the same inputs and changes no state", async function () {
      const { policy, pay, setPolicy } = await loadFixture(policyFixture);
      await setPolicy({ dailyBudget: usdc(10) });
      await pay(usdc(3));
      await pay(usdc(3));
      // 6 of 10 spent.
      const cases: [bigint, string, bigint, bigint][] = [
        [1n, "api.example.com", Decision.Allow, 0n],
        [usdc(3), "a.b.data.io", Decision.Allow, 0n],
        [0n, "weather.xyz", Decision.Allow, 0n],
        [usdc(4), "api.example.com", Decision.RequiresApproval, 5n],
        [usdc(4) + 1n, "api.example.com", Decision.Block, 3n],
        [usdc(5) + 1n, "api.example.com", Decision.Block, 2n],
        [1n, "data.io", Decision.Block, 1n],
        [1n, "", Decision.Block, 1n],
      ];
      for (const [amount, merchant, decision, reason] of cases) {
        const { leaf, proof } = proofFor(ALLOWLIST, merchant);
        const spentBefore = await policy.spentToday();
        expect(await policy.checkPayment(merchant, leaf, proof, ANY_PAYEE, amount)).to.deep.equal(
          [decision, reason],
          `${merchant} ${amount}`,
        );
        expect(await policy.spentToday()).to.equal(spentBefore);
        const [authorized, actualReason] = await payStatic(policy, amount, merchant);
        expect(authorized).to.equal(decision === Decision.Allow, `${merchant} ${amount}`);
        expect(actualReason).to.equal(reason);
      }
    });
  });

  describe("amount 0", function () {
    it("authorises a zero payment to an allowed merchant (it passes every limit) and records it", async function () {
      const { policy, agent, pay } = await loadFixture(policyFixture);
      const id = paymentId();
      await expect(pay(0n, "api.example.com", { id }))
        .to.emit(policy, "PaymentAuthorized")
        .withArgs(...authorizedArgs(id, agent, "api.example.com", 0n));
      expect(await policy.paymentState(id)).to.equal(1n);
    });
  });

  describe("gas", function () {
    it("costs under 75.5k gas for an allowed payment and under 50k for a blocked one", async function () {
      const { pay } = await loadFixture(policyFixture);
      await pay(1n); // the first payment of the fixture's day, as any other
      const allowed = await (await pay(usdc(2), "x.maps.dev")).wait();
      const blocked = await (await pay(usdc(6), "api.example.com")).wait();
      const notAllowed = await (await pay(1n, "evil.example.net")).wait();
      expect(allowed!.gasUsed).to.be.lessThan(75_500n);
      expect(blocked!.gasUsed).to.be.lessThan(50_000n);
      expect(notAllowed!.gasUsed).to.be.lessThan(50_000n);
    });
  });
});

type Policy = Awaited<ReturnType<typeof policyFixture>>["policy"];

/** authorizePayment's return value without sending it. */
async function payStatic(policy: Policy, amount: bigint, merchant = "api.example.com"): Promise<[boolean, bigint]> {
  const { leaf, proof } = proofFor(ALLOWLIST, merchant);
  const operator = await hre.ethers.getSigner(await policy.operator());
  const [authorized, reason] = await policy
    .connect(operator)
    .authorizePayment.staticCall(paymentId(), merchant, leaf, proof, await transferOf(amount, PAYEE), NO_APPROVAL);
  return [authorized, reason];
}
