import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import type { Signer } from "ethers";
import {
  authorizedArgs,
  ALLOWLIST,
  DEFAULT_POLICY,
  paymentId,
  policyFixture,
  proofFor,
  signApproval,
  usdc,
  transferOf,
  blockedArgs,
} from "../helpers/policyFixture";

/** Where the authorised transfers pay (any address but the wallet). */
const PAYEE = "0x00000000000000000000000000000000000bee01";

const MERCHANT = "api.example.com";
const ABOVE = DEFAULT_POLICY.approvalThreshold + 1n; // 3.000001 USDC, needs an approval

/** A fixture with an owner approval of `amount` for MERCHANT, signed now. */
async function approvalFixture() {
  const fx = await policyFixture();
  const approve = async (
    fields: Partial<{
      approvalId: string;
      merchant: string;
      payTo: string;
      amount: bigint;
      timestamp: bigint;
      action: "approve" | "deny";
    }> = {},
    signer: Signer = fx.owner,
    policyAddress = fx.policyAddress,
    agent = fx.agent,
  ) =>
    signApproval(signer, policyAddress, {
      approvalId: "apr_1",
      agent,
      merchant: MERCHANT,
      payTo: fx.merchant.address,
      amount: ABOVE,
      timestamp: BigInt(await time.latest()),
      ...fields,
    });
  return { ...fx, approve };
}

describe("SpendPolicy owner approvals", function () {
  it("authorises a payment above the threshold with the owner's approval and marks the approvalId used", async function () {
    const { policy, agent, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve();
    const id = paymentId();
    expect(await policy.approvalUsed("apr_1")).to.equal(false);
    await expect(pay(ABOVE, MERCHANT, { id, approval }))
      .to.emit(policy, "PaymentAuthorized")
      .withArgs(...authorizedArgs(id, agent, MERCHANT, ABOVE));
    expect(await policy.approvalUsed("apr_1")).to.equal(true);
    expect(await policy.spentToday()).to.equal(ABOVE);
  });

  it("blocks with reason 5 when the approval is signed by another key", async function () {
    const { policy, agent, other, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve({}, other);
    const id = paymentId();
    await expect(pay(ABOVE, MERCHANT, { id, approval }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, MERCHANT, ABOVE, 5));
    expect(await policy.approvalUsed("apr_1")).to.equal(false);
  });

  it("blocks a second payment that reuses an approvalId with reason 5", async function () {
    const { policy, agent, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve();
    await expect(pay(ABOVE, MERCHANT, { approval })).to.emit(policy, "PaymentAuthorized");
    const id = paymentId();
    await expect(pay(ABOVE, MERCHANT, { id, approval }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, MERCHANT, ABOVE, 5));
  });

  it("blocks a payment larger than the approved amount with reason 5 and leaves the approval unused", async function () {
    const { policy, agent, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve({ amount: usdc(4) });
    const id = paymentId();
    await expect(pay(usdc(4) + 1n, MERCHANT, { id, approval }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, MERCHANT, usdc(4) + 1n, 5));
    expect(await policy.approvalUsed("apr_1")).to.equal(false);
  });

  it("authorises a payment smaller than (or equal to) the approved amount, counting only what is paid", async function () {
    const { policy, agent, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve({ amount: usdc(4) });
    const id = paymentId();
    await expect(pay(usdc("3.5"), MERCHANT, { id, approval }))
      .to.emit(policy, "PaymentAuthorized")
      .withArgs(...authorizedArgs(id, agent, MERCHANT, usdc("3.5")));
    const approval2 = await approve({ approvalId: "apr_2", amount: usdc(4) });
    await expect(pay(usdc(4), MERCHANT, { approval: approval2 })).to.emit(policy, "PaymentAuthorized");
  });

  it("blocks with reason 5 when the approval names another merchant", async function () {
    const { policy, agent, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve({ merchant: "weather.xyz" });
    const id = paymentId();
    await expect(pay(ABOVE, MERCHANT, { id, approval }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, MERCHANT, ABOVE, 5));
  });

  it("blocks with reason 5 for a deny decision signed by the owner", async function () {
    const { policy, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve({ action: "deny" });
    await expect(pay(ABOVE, MERCHANT, { approval })).to.emit(policy, "PaymentBlocked");
  });

  it("blocks with reason 5 when the approval was signed for another agent's policy", async function () {
    const { policy, pay, approve, walletPolicy, agent2 } = await loadFixture(approvalFixture);
    const approval = await approve({}, undefined, await walletPolicy.getAddress(), agent2);
    await expect(pay(ABOVE, MERCHANT, { approval })).to.emit(policy, "PaymentBlocked");
  });

  it("accepts an approval up to APPROVAL_WINDOW (1 hour) old and blocks an older one", async function () {
    const { policy, pay, approve } = await loadFixture(approvalFixture);
    expect(await policy.APPROVAL_WINDOW()).to.equal(3600n);
    const signedAt = BigInt(await time.latest());
    const fresh = await approve({ approvalId: "apr_fresh", timestamp: signedAt });
    const stale = await approve({ approvalId: "apr_stale", timestamp: signedAt });
    const validBefore = signedAt + 4000n;
    await time.setNextBlockTimestamp(signedAt + 3600n);
    await expect(pay(ABOVE, MERCHANT, { approval: fresh, validBefore })).to.emit(policy, "PaymentAuthorized");
    await time.setNextBlockTimestamp(signedAt + 3601n);
    const id = paymentId();
    await expect(pay(ABOVE, MERCHANT, { id, approval: stale, validBefore }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, await policy.agent(), MERCHANT, ABOVE, 5));
  });

  it("blocks with reason 5 an approval dated more than an hour ahead", async function () {
    const { policy, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve({ timestamp: BigInt(await time.latest()) + 3700n });
    await expect(pay(ABOVE, MERCHANT, { approval })).to.emit(policy, "PaymentBlocked");
  });

  it("ignores (and does not consume) an approval sent with a payment under the threshold", async function () {
    const { policy, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve();
    await expect(pay(1n, MERCHANT, { approval })).to.emit(policy, "PaymentAuthorized");
    expect(await policy.approvalUsed("apr_1")).to.equal(false);
  });

  it("still applies the per-transaction limit and daily budget to approved payments", async function () {
    const { policy, agent, pay, approve } = await loadFixture(approvalFixture);
    const approval = await approve({ amount: usdc(6) });
    const id = paymentId();
    await expect(pay(usdc(6), MERCHANT, { id, approval }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, MERCHANT, usdc(6), 2));
    expect(await policy.approvalUsed("apr_1")).to.equal(false);
  });

  describe("with an ERC-1271 contract owner", function () {
    it("accepts an approval signed by the wallet's signer", async function () {
      const { walletPolicy, agent2, walletSigner, pay, approve } = await loadFixture(approvalFixture);
      const approval = await approve({}, walletSigner, await walletPolicy.getAddress(), agent2);
      const id = paymentId();
      await expect(pay(ABOVE, MERCHANT, { id, approval, target: walletPolicy }))
        .to.emit(walletPolicy, "PaymentAuthorized")
        .withArgs(...authorizedArgs(id, agent2, MERCHANT, ABOVE));
    });

    it("blocks with reason 5 an approval signed by another key", async function () {
      const { walletPolicy, agent2, owner, pay, approve } = await loadFixture(approvalFixture);
      const approval = await approve({}, owner, await walletPolicy.getAddress(), agent2);
      const id = paymentId();
      await expect(pay(ABOVE, MERCHANT, { id, approval, target: walletPolicy }))
        .to.emit(walletPolicy, "PaymentBlocked")
        .withArgs(...blockedArgs(id, agent2, MERCHANT, ABOVE, 5));
    });
  });

  it("returns (false, 5) from authorizePayment for a refused approval, without reverting", async function () {
    const { policy, operator, other, approve } = await loadFixture(approvalFixture);
    const approval = await approve({}, other);
    const { leaf, proof } = proofFor(ALLOWLIST, MERCHANT);
    const result = await policy
      .connect(operator)
      .authorizePayment.staticCall(hre.ethers.ZeroHash, MERCHANT, leaf, proof, await transferOf(ABOVE, PAYEE), approval);
    expect([result[0], result[1]]).to.deep.equal([false, 5n]);
  });
});
