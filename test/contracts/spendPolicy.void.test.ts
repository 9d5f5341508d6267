import { expect } from "chai";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { paymentId, policyFixture, signTransfer, transferOf, usdc, type TransferValues } from "../helpers/policyFixture";

const INVALID = "0xffffffff";
const VOID = 2n;

type Fixture = Awaited<ReturnType<typeof policyFixture>>;

/** USDC's transferWithAuthorization (bytes overload) from the agent wallet, as a facilitator settles it. */
function settle({ token, agent, other }: Fixture, id: string, t: TransferValues, sig: string) {
  return token
    .connect(other)
    ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
      agent,
      t.payTo,
      t.amount,
      t.validAfter,
      t.validBefore,
      id,
      sig,
    );
}

/** voidUnrecordedPayment: recovery's way to make sure an interrupted run's authorisation can never land. */
describe("SpendPolicy voidUnrecordedPayment", function () {
  it("voids a paymentId with no record: PaymentVoided, state 2, nothing counted", async function () {
    const { policy, agent, operator } = await loadFixture(policyFixture);
    const id = paymentId();
    await expect(policy.connect(operator).voidUnrecordedPayment(id)).to.emit(policy, "PaymentVoided").withArgs(id, agent);
    expect(await policy.paymentState(id)).to.equal(VOID);
    expect(await policy.spentToday()).to.equal(0n);
  });

  it("makes every later authorizePayment of the paymentId revert SpendPolicyPaymentExists", async function () {
    const { policy, operator, pay } = await loadFixture(policyFixture);
    const id = paymentId();
    await (await policy.connect(operator).voidUnrecordedPayment(id)).wait();
    await expect(pay(usdc(1), "api.example.com", { id }))
      .to.be.revertedWithCustomError(policy, "SpendPolicyPaymentExists")
      .withArgs(id);
    expect(await policy.paymentState(id)).to.equal(VOID);
    expect(await policy.spentToday()).to.equal(0n);
  });

  it("reverts SpendPolicyPaymentExists when voided twice", async function () {
    const { policy, operator } = await loadFixture(policyFixture);
    const id = paymentId();
    await (await policy.connect(operator).voidUnrecordedPayment(id)).wait();
    await expect(policy.connect(operator).voidUnrecordedPayment(id))
      .to.be.revertedWithCustomError(policy, "SpendPolicyPaymentExists")
      .withArgs(id);
  });

  it("reverts SpendPolicyPaymentExists for an authorised payment, which stays authorised and counted", async function () {
    const { policy, operator, pay } = await loadFixture(policyFixture);
    const id = paymentId();
    await pay(usdc(2), "api.example.com", { id });
    await expect(policy.connect(operator).voidUnrecordedPayment(id))
      .to.be.revertedWithCustomError(policy, "SpendPolicyPaymentExists")
      .withArgs(id);
    expect(await policy.paymentState(id)).to.equal(1n);
    expect(await policy.spentToday()).to.equal(usdc(2));
  });

  it("reverts SpendPolicyPaymentExists for a settled payment", async function () {
    const f = await loadFixture(policyFixture);
    const { policy, operator, pay, transfers, token, agent, agentKey } = f;
    const id = paymentId();
    await pay(usdc(1), "api.example.com", { id });
    const t = transfers.get(id)!;
    await (await settle(f, id, t, await signTransfer(agentKey, token, agent, id, t))).wait();
    await expect(policy.connect(operator).voidUnrecordedPayment(id))
      .to.be.revertedWithCustomError(policy, "SpendPolicyPaymentExists")
      .withArgs(id);
  });

  it("voids a released paymentId, which then can never be authorised again", async function () {
    const { policy, operator, pay, release } = await loadFixture(policyFixture);
    const id = paymentId();
    await pay(usdc(1), "api.example.com", { id });
    await release(id);
    await expect(policy.connect(operator).voidUnrecordedPayment(id)).to.emit(policy, "PaymentVoided");
    await expect(pay(usdc(1), "api.example.com", { id })).to.be.revertedWithCustomError(policy, "SpendPolicyPaymentExists");
  });

  it("reverts SpendPolicyUnauthorizedOperator(caller) for anyone but the operator", async function () {
    const { policy, other, owner } = await loadFixture(policyFixture);
    const id = paymentId();
    for (const caller of [other, owner]) {
      await expect(policy.connect(caller).voidUnrecordedPayment(id))
        .to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator")
        .withArgs(caller.address);
    }
    expect(await policy.paymentState(id)).to.equal(0n);
  });

  it("never answers ERC-1271 for a void paymentId, and USDC refuses its transfer", async function () {
    const f = await loadFixture(policyFixture);
    const { policy, operator, token, agent, agentKey, merchant } = f;
    const id = paymentId();
    await (await policy.connect(operator).voidUnrecordedPayment(id)).wait();
    const t = await transferOf(usdc(1), merchant.address);
    const sig = await signTransfer(agentKey, token, agent, id, t);
    expect(await policy.isValidSignature(await policy.transferDigest(id, t), sig)).to.equal(INVALID);
    await expect(settle(f, id, t, sig)).to.be.revertedWith("FiatTokenV2: invalid signature");
  });

  it("refuses releasePayment and swapForPayment of a void paymentId (SpendPolicyUnknownPayment)", async function () {
    const { policy, operator, merchant } = await loadFixture(policyFixture);
    const id = paymentId();
    await (await policy.connect(operator).voidUnrecordedPayment(id)).wait();
    const t = await transferOf(usdc(1), merchant.address);
    await expect(policy.connect(operator).releasePayment(id, t))
      .to.be.revertedWithCustomError(policy, "SpendPolicyUnknownPayment")
      .withArgs(id);
    await expect(policy.connect(operator).swapForPayment(id, "api.example.com", t))
      .to.be.revertedWithCustomError(policy, "SpendPolicyUnknownPayment")
      .withArgs(id);
    expect(await policy.paymentState(id)).to.equal(VOID);
  });
});
