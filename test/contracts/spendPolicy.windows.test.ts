import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import { ALLOWLIST, paymentId, policyFixture, proofFor, storedTuple, usdc } from "../helpers/policyFixture";
import { ANY_PAYEE } from "../../src/policy/allowlist";
import type { SpendPolicy } from "../../typechain-types";

const HOUR = 3_600;
const DAY = 86_400;
const WEEK = 7 * DAY;
const MONTH = 30 * DAY;
const Reason = { None: 0, Daily: 3, Velocity: 6, Expired: 7, Hourly: 8, Weekly: 9, Monthly: 10, Lifetime: 11 };

/** Limits loose enough that only the window under test binds. */
const LOOSE = { perTxLimit: usdc(100), dailyBudget: usdc(1000), approvalThreshold: usdc(100) };

/** 0 when the payment was authorised, else PaymentBlocked's reason. */
async function reasonOf(policy: SpendPolicy, tx: Promise<ContractTransactionResponse>): Promise<number> {
  const receipt = await (await tx).wait();
  for (const log of receipt!.logs) {
    const parsed = policy.interface.parseLog(log);
    if (parsed?.name === "PaymentAuthorized") return Reason.None;
    if (parsed?.name === "PaymentBlocked") return Number(parsed.args.reason);
  }
  throw new Error("neither PaymentAuthorized nor PaymentBlocked");
}

/** Moves chain time to 60 s after the start of the next `period`-long window of the epoch; returns that start. */
async function toWindowStart(period: number): Promise<number> {
  const start = (Math.floor((await time.latest()) / period) + 1) * period;
  await time.increaseTo(start + 60);
  return start;
}

describe("SpendPolicy windows, velocity and expiry", function () {
  const cases = [
    { name: "hourly", field: "hourlyBudget", reason: Reason.Hourly, period: HOUR, view: "hour" },
    { name: "daily", field: "dailyBudget", reason: Reason.Daily, period: DAY, view: "day" },
    { name: "weekly", field: "weeklyBudget", reason: Reason.Weekly, period: WEEK, view: "week" },
    { name: "monthly (30 days)", field: "monthlyBudget", reason: Reason.Monthly, period: MONTH, view: "month" },
  ] as const;

  for (const c of cases) {
    it(`${c.name} budget: the last unit fits, the first over is blocked (reason ${c.reason}), and the next window starts empty`, async function () {
      const { policy, pay, setPolicy } = await loadFixture(policyFixture);
      const start = await toWindowStart(c.period);
      await setPolicy({ ...LOOSE, [c.field]: usdc(10) });
      expect(await reasonOf(policy, pay(usdc(10) - 1n))).to.equal(Reason.None);
      expect(await reasonOf(policy, pay(1n))).to.equal(Reason.None);
      expect((await policy.spending())[c.view]).to.equal(usdc(10));
      const { leaf, proof } = proofFor(ALLOWLIST, "api.example.com");
      expect(await policy.checkPayment("api.example.com", leaf, proof, ANY_PAYEE, 1n)).to.deep.equal([2n, BigInt(c.reason)]);
      expect(await reasonOf(policy, pay(1n))).to.equal(c.reason);
      // Still the same window one second before it ends.
      await time.increaseTo(start + c.period - 2);
      expect(await reasonOf(policy, pay(1n))).to.equal(c.reason);
      await time.increaseTo(start + c.period);
      expect((await policy.spending())[c.view]).to.equal(0n);
      expect(await reasonOf(policy, pay(usdc(10)))).to.equal(Reason.None);
    });
  }

  it("lifetime budget: the last unit fits, the first over is blocked (reason 11), and no time frees it", async function () {
    const { policy, pay, setPolicy } = await loadFixture(policyFixture);
    await setPolicy({ ...LOOSE, lifetimeBudget: usdc(10) });
    expect(await reasonOf(policy, pay(usdc(10) - 1n))).to.equal(Reason.None);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.None);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Lifetime);
    await time.increase(2 * MONTH);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Lifetime);
    expect((await policy.spending()).lifetime).to.equal(usdc(10));
  });

  it("a window counts only the payments authorised while its limit is set", async function () {
    const { policy, pay, setPolicy } = await loadFixture(policyFixture);
    await toWindowStart(WEEK);
    await setPolicy({ ...LOOSE, weeklyBudget: usdc(10) });
    expect(await reasonOf(policy, pay(usdc(10)))).to.equal(Reason.None);
    await setPolicy({ ...LOOSE });
    expect((await policy.spending()).week).to.equal(0n);
    expect(await reasonOf(policy, pay(usdc(10)))).to.equal(Reason.None);
    // On again in the same week: the 10 counted while it was on still count, the 10 paid while it was off do not.
    await setPolicy({ ...LOOSE, weeklyBudget: usdc(15) });
    expect((await policy.spending()).week).to.equal(usdc(10));
    expect(await reasonOf(policy, pay(usdc(5)))).to.equal(Reason.None);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Weekly);
  });

  it("releasing a payment made before a window's limit was set leaves that window's count alone", async function () {
    const { policy, pay, release, setPolicy } = await loadFixture(policyFixture);
    await toWindowStart(WEEK);
    // Counted in the hour (its limit is set), not in the week (no weekly limit yet).
    await setPolicy({ ...LOOSE, hourlyBudget: usdc(100) });
    const early = paymentId();
    expect(
      await reasonOf(policy, pay(usdc(9), "api.example.com", { id: early, validBefore: BigInt(await time.latest()) + 3_000n })),
    ).to.equal(Reason.None);
    await setPolicy({ ...LOOSE, hourlyBudget: usdc(100), weeklyBudget: usdc(10) });
    expect(await reasonOf(policy, pay(usdc(10)))).to.equal(Reason.None);
    await (await release(early)).wait();
    const s = await policy.spending();
    expect([s.hour, s.week]).to.deep.equal([usdc(10), usdc(10)]);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Weekly);
  });

  it("velocity: maxPaymentsPerHour payments fit in a UTC hour, the next is blocked (reason 6) until the next hour", async function () {
    const { policy, pay, release, setPolicy } = await loadFixture(policyFixture);
    const start = await toWindowStart(HOUR);
    await setPolicy({ ...LOOSE, maxPaymentsPerHour: 3n });
    const ids = [paymentId(), paymentId(), paymentId()];
    for (const id of ids) expect(await reasonOf(policy, pay(1n, "api.example.com", { id }))).to.equal(Reason.None);
    expect((await policy.spending()).paymentsThisHour).to.equal(3n);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Velocity);
    // A released payment paid nothing: it gives its slot back.
    await (await release(ids[0])).wait();
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.None);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Velocity);
    await time.increaseTo(start + HOUR);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.None);
  });

  it("expiry: payments pass up to validUntil, every one after is blocked (reason 7) until a new policy", async function () {
    const { policy, pay, setPolicy } = await loadFixture(policyFixture);
    const validUntil = BigInt(await time.latest()) + 100n;
    await setPolicy({ ...LOOSE, validUntil });
    await time.setNextBlockTimestamp(validUntil);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.None);
    await time.setNextBlockTimestamp(validUntil + 1n);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Expired);
    const { leaf, proof } = proofFor(ALLOWLIST, "api.example.com");
    expect(await policy.checkPayment("api.example.com", leaf, proof, ANY_PAYEE, 1n)).to.deep.equal([2n, 7n]);
    await time.increase(DAY);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Expired);
    await setPolicy({ ...LOOSE });
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.None);
  });

  it("release gives the amount back to every window it was counted in, and a later-hour release spares the new hour", async function () {
    const { policy, pay, release, setPolicy } = await loadFixture(policyFixture);
    await toWindowStart(MONTH);
    const ten = usdc(10);
    await setPolicy({ ...LOOSE, hourlyBudget: ten, dailyBudget: ten, weeklyBudget: ten, monthlyBudget: ten, lifetimeBudget: ten });
    const id = paymentId();
    expect(await reasonOf(policy, pay(ten, "api.example.com", { id }))).to.equal(Reason.None);
    let s = await policy.spending();
    expect([s.hour, s.day, s.week, s.month, s.lifetime]).to.deep.equal([ten, ten, ten, ten, ten]);
    expect(await reasonOf(policy, pay(1n))).to.equal(Reason.Hourly);
    await (await release(id)).wait();
    s = await policy.spending();
    expect([s.hour, s.day, s.week, s.month, s.lifetime]).to.deep.equal([0n, 0n, 0n, 0n, 0n]);
    const id2 = paymentId();
    expect(
      await reasonOf(policy, pay(usdc(4), "api.example.com", { id: id2, validBefore: BigInt(await time.latest()) + 3_000n })),
    ).to.equal(Reason.None);
    // The next hour (same day, week and 30 days): 4 USDC counted this hour would be wrong to take back.
    await time.increase(HOUR);
    expect(await reasonOf(policy, pay(usdc(3)))).to.equal(Reason.None);
    await (await release(id2)).wait();
    s = await policy.spending();
    expect([s.hour, s.day, s.week, s.month, s.lifetime]).to.deep.equal([usdc(3), usdc(3), usdc(3), usdc(3), usdc(3)]);
  });

  it("stores and returns every field of the grown policy (swap fields stored only)", async function () {
    const { policy, setPolicy } = await loadFixture(policyFixture);
    const values = await setPolicy({
      ...LOOSE,
      hourlyBudget: 1n,
      weeklyBudget: 2n,
      monthlyBudget: 3n,
      lifetimeBudget: 4n,
      maxPaymentsPerHour: 65_535n,
      validUntil: 2n ** 32n - 1n,
      maxSwapSlippageBps: 10_000n,
      swapTwapSeconds: 2n ** 32n - 1n,
    });
    expect([...(await policy.policy())]).to.deep.equal(storedTuple(values));
    expect(await policy.policyVersion()).to.equal(2n);
  });

  it("refuses a policy field over its width with SpendPolicyInvalidPolicy", async function () {
    const { policy, setPolicy } = await loadFixture(policyFixture);
    for (const bad of [
      { hourlyBudget: 2n ** 64n },
      { lifetimeBudget: 2n ** 64n },
      { maxPaymentsPerHour: 65_536n },
      { validUntil: 2n ** 32n },
      { maxSwapSlippageBps: 10_001n },
      { swapTwapSeconds: 2n ** 32n },
    ]) {
      await expect(setPolicy(bad)).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidPolicy");
    }
    hre;
  });
});
