import { expect } from "chai";
import { allowlistRoot } from "../../src/policy/allowlist";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { ALLOWLIST, DEFAULT_POLICY, paymentId, policyFixture, transferOf, usdc } from "../helpers/policyFixture";

const DAY = 86_400;

describe("SpendPolicy payment ids, release and access", function () {
  describe("payment ids", function () {
    it("reverts SpendPolicyPaymentExists when an authorised paymentId is authorised again", async function () {
      const { policy, pay } = await loadFixture(policyFixture);
      const id = paymentId();
      await pay(1n, "api.example.com", { id });
      await expect(pay(1n, "api.example.com", { id }))
        .to.be.revertedWithCustomError(policy, "SpendPolicyPaymentExists")
        .withArgs(id);
    });

    it("lets a released paymentId be authorised again only by a new, visible, budgeted authorisation", async function () {
      const { policy, pay, release } = await loadFixture(policyFixture);
      const id = paymentId();
      await pay(usdc(1), "api.example.com", { id });
      await release(id);
      expect(await policy.spentToday()).to.equal(0n);
      await expect(pay(usdc(1), "api.example.com", { id })).to.emit(policy, "PaymentAuthorized");
      expect(await policy.spentToday()).to.equal(usdc(1));
      expect(await policy.paymentState(id)).to.equal(1n);
    });

    it("records nothing for a blocked paymentId, so it can be authorised later", async function () {
      const { policy, pay } = await loadFixture(policyFixture);
      const id = paymentId();
      await expect(pay(1n, "evil.com", { id })).to.emit(policy, "PaymentBlocked");
      expect(await policy.paymentState(id)).to.equal(0n);
      await expect(pay(1n, "api.example.com", { id })).to.emit(policy, "PaymentAuthorized");
      expect(await policy.paymentState(id)).to.equal(1n);
    });
  });

  describe("releasePayment", function () {
    it("gives the amount back to today's budget, marks the payment released and emits PaymentReleased", async function () {
      const { policy, agent, pay, release } = await loadFixture(policyFixture);
      const id = paymentId();
      await pay(usdc(3), "api.example.com", { id });
      await pay(usdc(2));
      expect(await policy.spentToday()).to.equal(usdc(5));
      await expect(release(id)).to.emit(policy, "PaymentReleased").withArgs(id, agent, usdc(3), usdc(2));
      expect(await policy.spentToday()).to.equal(usdc(2));
      expect(await policy.remainingDailyBudget()).to.equal(DEFAULT_POLICY.dailyBudget - usdc(2));
      expect(await policy.paymentState(id)).to.equal(0n); // the record is gone: the wallet refuses its transfer
    });

    it("lets a released amount be spent again the same day", async function () {
      const { policy, pay, release } = await loadFixture(policyFixture);
      const ids = [paymentId(), paymentId(), paymentId(), paymentId()];
      for (const id of ids) await pay(usdc(3), "api.example.com", { id });
      await expect(pay(1n)).to.emit(policy, "PaymentBlocked");
      await release(ids[0]);
      await expect(pay(usdc(3))).to.emit(policy, "PaymentAuthorized");
    });

    it("releases a previous day's payment without touching today's spend", async function () {
      const { policy, agent, pay, release } = await loadFixture(policyFixture);
      const id = paymentId();
      await pay(usdc(3), "api.example.com", { id });
      await time.increase(DAY);
      await pay(usdc(2));
      expect(await policy.spentToday()).to.equal(usdc(2));
      await expect(release(id)).to.emit(policy, "PaymentReleased").withArgs(id, agent, usdc(3), usdc(2));
      expect(await policy.spentToday()).to.equal(usdc(2));
      expect(await policy.paymentState(id)).to.equal(0n);
    });

    it("reverts SpendPolicyUnknownPayment when released twice or never authorised", async function () {
      const { policy, other, pay, release } = await loadFixture(policyFixture);
      const id = paymentId();
      await pay(1n, "api.example.com", { id });
      await release(id);
      await expect(release(id)).to.be.revertedWithCustomError(policy, "SpendPolicyUnknownPayment").withArgs(id);
      const unknown = paymentId();
      await expect(release(unknown, { transfer: await transferOf(1n, other.address) }))
        .to.be.revertedWithCustomError(policy, "SpendPolicyUnknownPayment")
        .withArgs(unknown);
    });
  });

  describe("operator-only calls", function () {
    it("reverts authorizePayment from another account with SpendPolicyUnauthorizedOperator(caller)", async function () {
      const { policy, other, owner, pay } = await loadFixture(policyFixture);
      for (const caller of [other, owner]) {
        await expect(pay(1n, "api.example.com", { from: caller }))
          .to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator")
          .withArgs(caller.address);
      }
    });

    it("reverts releasePayment from another account with SpendPolicyUnauthorizedOperator(caller)", async function () {
      const { policy, other, pay, release } = await loadFixture(policyFixture);
      const id = paymentId();
      await pay(1n, "api.example.com", { id });
      await expect(release(id, { from: other }))
        .to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator")
        .withArgs(other.address);
    });

    it("reverts initialize from anyone but the factory with SpendPolicyUnauthorizedDeployer(caller)", async function () {
      const { policy, operator } = await loadFixture(policyFixture);
      await expect(policy.connect(operator).initialize(operator.address, operator.address, DEFAULT_POLICY, 1n, "0x"))
        .to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedDeployer")
        .withArgs(operator.address);
    });
  });

  describe("views", function () {
    it("reports agent, owner, operator, factory, the first policy and its timestamp", async function () {
      const { policy, factory, agent, owner, operator } = await loadFixture(policyFixture);
      expect(await policy.agent()).to.equal(agent);
      expect(await policy.owner()).to.equal(owner.address);
      expect(await policy.operator()).to.equal(operator.address);
      expect(await policy.factory()).to.equal(await factory.getAddress());
      expect(await policy.paused()).to.equal(false);
      const p = await policy.policy();
      expect([p.perTxLimit, p.dailyBudget, p.allowlistRoot, p.approvalThreshold]).to.deep.equal([
        DEFAULT_POLICY.perTxLimit,
        DEFAULT_POLICY.dailyBudget,
        allowlistRoot(ALLOWLIST),
        DEFAULT_POLICY.approvalThreshold,
      ]);
      expect(await policy.lastTimestamp(0)).to.be.greaterThan(0n);
      expect(await policy.lastTimestamp(1)).to.equal(0n);
      expect(await policy.lastTimestamp(2)).to.equal(0n);
      expect(await policy.lastTimestamp(3)).to.equal(0n);
      expect(await policy.lastTimestamp(7)).to.equal(0n);
      expect(await policy.spentToday()).to.equal(0n);
      expect(await policy.remainingDailyBudget()).to.equal(DEFAULT_POLICY.dailyBudget);
    });
  });
});
