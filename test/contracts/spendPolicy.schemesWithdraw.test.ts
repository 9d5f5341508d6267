import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { usdc } from "../helpers/policyFixture";
import { channelConfig, channelFixture, channelIdOf } from "../helpers/schemesFixture";

const { ethers } = hre;
const BATCH = 1;
const DELAY = 900;

/**
 * The payer-forced way out of a channel: a seller that never refunds cannot strand the wallet's deposit. The operator
 * or the owner starts the channel contract's timed withdrawal as the payer (withdrawChannel), finishes it after the
 * channel's delay (finishChannelWithdraw), and creditChannel gives what came back to the budget, once.
 */
describe("SpendPolicy x402 schemes: the wallet withdraws from a channel whose seller never refunds", function () {
  async function fixture() {
    const f = await channelFixture();
    // The delay moves chain time 15 minutes: start at the top of a UTC day so the day's budget stays the same day.
    await time.increaseTo((Math.floor((await time.latest()) / 86400) + 1) * 86400 + 60);
    /** A landed deposit of `amount` into a new channel to the merchant. */
    const funded = async (amount: bigint) => {
      const d = await f.deposit(amount);
      await (await d.tx).wait();
      await (await d.land()).wait();
      return d;
    };
    const withdraw = (d: { config: object }, from = f.operator) => f.schemes.connect(from).withdrawChannel(d.config as never);
    const finish = (d: { config: object }, from = f.operator) => f.schemes.connect(from).finishChannelWithdraw(d.config as never);
    const credit = (id: string) => f.schemes.connect(f.operator).creditChannel(id);
    return { ...f, funded, withdraw, finish, credit };
  }

  it("withdraws what the seller did not claim after the delay, and the credit restores the budget exactly once", async function () {
    const f = await loadFixture(fixture);
    const d = await f.funded(usdc(3));
    // The seller claims 1 USDC with the wallet's voucher and is paid, then never refunds the other 2.
    await (await f.claim(d.config, usdc(1))).wait();
    await (await f.settle()).wait();
    expect(await f.policy.spentToday()).to.equal(usdc(3));

    const started = f.withdraw(d);
    await expect(started).to.emit(f.schemes, "ChannelWithdrawal").withArgs(d.channelId, f.operator.address, usdc(2), false);
    const initiatedAt = BigInt(await time.latest());
    await expect(started)
      .to.emit(f.batch, "WithdrawInitiated")
      .withArgs(d.channelId, usdc(2), initiatedAt + BigInt(DELAY));
    await expect(f.finish(d)).to.be.revertedWithCustomError(f.batch, "WithdrawDelayNotElapsed");

    await time.increase(DELAY);
    const finished = f.finish(d);
    await expect(finished).to.emit(f.schemes, "ChannelWithdrawal").withArgs(d.channelId, f.operator.address, usdc(2), true);
    await expect(finished).to.changeTokenBalance(f.token, f.agent, usdc(2));
    expect(await f.onChain(d.channelId)).to.deep.equal({ balance: usdc(1), totalClaimed: usdc(1) });
    // Back in the wallet, not yet in the budget: the credit gives it back to the day it was taken from.
    expect(await f.policy.spentToday()).to.equal(usdc(3));
    await expect(f.credit(d.id))
      .to.emit(f.schemes, "PaymentReleased")
      .withArgs(d.id, f.agent, usdc(2), usdc(1))
      .and.to.emit(f.schemes, "SchemeCredited")
      .withArgs(d.id, BATCH, d.channelId, usdc(2), usdc(2));
    expect(await f.policy.spentToday()).to.equal(usdc(1));
    await expect(f.credit(d.id)).to.be.revertedWithCustomError(f.schemes, "SpendPolicyUnknownSchemePayment").withArgs(d.id);
    await expect(f.finish(d)).to.be.revertedWithCustomError(f.batch, "WithdrawalNotPending");
    expect(await f.policy.spentToday()).to.equal(usdc(1));
  });

  it("pays the seller's claims made during the delay first: the wallet gets back only what is still unclaimed", async function () {
    const f = await loadFixture(fixture);
    const d = await f.funded(usdc(3));
    await (await f.withdraw(d)).wait();
    await expect(f.withdraw(d)).to.be.revertedWithCustomError(f.batch, "WithdrawalAlreadyPending");
    await (await f.claim(d.config, usdc(1))).wait();
    await time.increase(DELAY);
    await expect(f.finish(d)).to.emit(f.schemes, "ChannelWithdrawal").withArgs(d.channelId, f.operator.address, usdc(2), true);
    await expect(f.credit(d.id)).to.emit(f.schemes, "SchemeCredited").withArgs(d.id, BATCH, d.channelId, usdc(2), usdc(2));
    expect(await f.policy.spentToday()).to.equal(usdc(1));
    // Everything left is claimed: nothing more to withdraw.
    await expect(f.withdraw(d)).to.be.revertedWithCustomError(f.batch, "NothingToWithdraw");
  });

  it("lets the owner withdraw as well as the operator, even while paused, and no stranger", async function () {
    const f = await loadFixture(fixture);
    const d = await f.funded(usdc(2));
    await expect(f.withdraw(d, f.other))
      .to.be.revertedWithCustomError(f.schemes, "SpendPolicyNotOperatorOrOwner")
      .withArgs(f.other.address);
    // Nor straight on the channel contract: only the payer (the wallet) may withdraw.
    await expect(f.batch.connect(f.other).initiateWithdraw(d.config, usdc(2))).to.be.revertedWithCustomError(f.batch, "NotPayerSide");
    await f.setPaused(true);
    await expect(f.withdraw(d, f.owner)).to.emit(f.schemes, "ChannelWithdrawal").withArgs(d.channelId, f.owner.address, usdc(2), false);
    await time.increase(DELAY);
    await expect(f.finish(d, f.other)).to.be.revertedWithCustomError(f.schemes, "SpendPolicyNotOperatorOrOwner").withArgs(f.other.address);
    await expect(f.finish(d, f.owner)).to.changeTokenBalance(f.token, f.agent, usdc(2));
    await (await f.credit(d.id)).wait();
    expect(await f.policy.spentToday()).to.equal(0n);
  });

  it("refuses channels the wallet never funded: unknown, or every deposit blocked", async function () {
    const f = await loadFixture(fixture);
    const unknown = channelConfig(f.agent, f.merchant.address, f.tokenAddress);
    await expect(f.withdraw({ config: unknown }))
      .to.be.revertedWithCustomError(f.schemes, "SpendPolicyUnknownChannel")
      .withArgs(channelIdOf(unknown));
    await expect(f.finish({ config: unknown }))
      .to.be.revertedWithCustomError(f.schemes, "SpendPolicyUnknownChannel")
      .withArgs(channelIdOf(unknown));
    const blocked = await f.deposit(usdc(1), channelConfig(f.agent, ethers.Wallet.createRandom().address, f.tokenAddress));
    await expect(blocked.tx).to.emit(f.schemes, "PaymentBlocked");
    await expect(f.withdraw(blocked)).to.be.revertedWithCustomError(f.schemes, "SpendPolicyUnknownChannel").withArgs(blocked.channelId);
  });

  it("takes no top-up while the withdrawal is in progress, then credits the withdrawn deposit once", async function () {
    const f = await loadFixture(fixture);
    const d = await f.funded(usdc(2));
    await (await f.withdraw(d)).wait();
    // A top-up during the delay is refused: what the withdrawal brings back is the deposits' before it.
    const topUp = await f.deposit(usdc(1), d.config);
    await expect(topUp.tx).to.be.revertedWithCustomError(f.schemes, "SpendPolicyChannelWithdrawing").withArgs(d.channelId);
    await time.increase(DELAY);
    await (await f.finish(d)).wait();
    expect(await f.policy.spentToday()).to.equal(usdc(2));
    await expect(f.credit(d.id)).to.emit(f.schemes, "SchemeCredited").withArgs(d.id, BATCH, d.channelId, usdc(2), usdc(2));
    await expect(f.credit(d.id)).to.be.reverted;
    expect(await f.policy.spentToday()).to.equal(0n);
    expect((await f.schemes.channelState(d.channelId)).credited).to.equal(usdc(2));
    // Once finished, the channel takes deposits again.
    const again = await f.deposit(usdc(1), d.config);
    await expect(again.tx).to.emit(f.schemes, "PaymentAuthorized");
  });
});
