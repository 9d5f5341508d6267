import { expect } from "chai";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { ZeroAddress } from "ethers";
import { signVoucher } from "@x402/evm/batch-settlement/client";
import { NO_APPROVAL, blockedArgs, merchantHash, paymentId, usdc } from "../helpers/policyFixture";
import {
  BATCH_SETTLEMENT,
  NETWORK,
  type Signed,
  channelConfig,
  channelFixture,
  channelIdOf,
  walletClientSigner,
} from "../helpers/schemesFixture";

const { ethers } = hre;
const MAGIC = "0x1626ba7e";
const INVALID = "0xffffffff";
const HOST = "api.example.com";
const BATCH = 1;

/**
 * Deposits into x402 batch-settlement channels and the vouchers the wallet signs for them, on the sandbox's channel
 * contract and ERC-3009 collector: deposits land through the collector, the seller claims with the wallet's vouchers,
 * refunds are the receiver authorizer's, and the wallet credits what came back.
 */
describe("SpendPolicy x402 schemes: channel deposits and vouchers", function () {
  const fixture = channelFixture;

  const answer = async (f: Awaited<ReturnType<typeof fixture>>, s: Signed) => f.policy.isValidSignature(s.digest, s.signature);

  describe("authorising a deposit", function () {
    it("authorises it like a payment (PaymentAuthorized, then SchemePayment naming the channel) and counts it in the budget", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(2));
      await expect(d.tx)
        .to.emit(f.schemes, "PaymentAuthorized")
        .withArgs(
          d.id,
          f.agent,
          merchantHash(HOST),
          HOST,
          f.merchant.address,
          usdc(2),
          0n,
          d.values.validBefore,
          usdc(2),
          anyValue,
          HOST,
          0n,
          f.merchant.address,
        )
        .and.to.emit(f.schemes, "SchemePayment")
        .withArgs(d.id, BATCH, d.channelId, true);
      expect(await f.policy.spentToday()).to.equal(usdc(2));
      expect(await f.policy.paymentState(d.id)).to.equal(1n);
      const state = await f.schemes.channelState(d.channelId);
      expect(state.deposited).to.equal(usdc(2));
      expect(state.latestDeposit).to.equal(d.id);
      expect(await f.schemes.channelIdOf(d.config)).to.equal(d.channelId);
    });

    it("answers ERC-1271 for exactly the stock client's ReceiveWithAuthorization: the deposit lands in the channel once", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(2));
      await (await d.tx).wait();
      expect(await f.schemes.depositDigest(d.channelId, d.values)).to.equal(d.receive.digest);
      expect(await answer(f, d.receive)).to.equal(MAGIC);
      const landed = d.land();
      await expect(landed).to.emit(f.batch, "Deposited").withArgs(d.channelId, f.deployer.address, usdc(2), usdc(2));
      await expect(landed).to.changeTokenBalances(f.token, [f.agent, BATCH_SETTLEMENT], [-usdc(2), usdc(2)]);
      expect(await f.onChain(d.channelId)).to.deep.equal({ balance: usdc(2), totalClaimed: 0n });
      await expect(d.land()).to.be.reverted;
    });

    it("blocks a deposit to a receiver that is not the pinned payee (payee_not_allowed, 14): nothing counted, nothing signed", async function () {
      const f = await loadFixture(fixture);
      const stranger = ethers.Wallet.createRandom().address;
      const d = await f.deposit(usdc(1), channelConfig(f.agent, stranger, f.tokenAddress));
      await expect(d.tx)
        .to.emit(f.schemes, "PaymentBlocked")
        .withArgs(...blockedArgs(d.id, f.agent, HOST, usdc(1), 14))
        .and.to.emit(f.schemes, "SchemePayment")
        .withArgs(d.id, BATCH, d.channelId, false);
      expect(await f.policy.spentToday()).to.equal(0n);
      expect(await answer(f, d.receive)).to.equal(INVALID);
    });

    it("refuses channels the wallet does not pay from alone: a payerAuthorizer, another payer or token, no receiver", async function () {
      const f = await loadFixture(fixture);
      const base = () => channelConfig(f.agent, f.merchant.address, f.tokenAddress);
      const someone = ethers.Wallet.createRandom().address;
      for (const over of [{ payerAuthorizer: f.agentKey.address }, { payer: someone }, { token: someone }, { receiver: f.agent }]) {
        const d = await f.deposit(usdc(1), { ...base(), ...over });
        await expect(d.tx, JSON.stringify(over)).to.be.revertedWithCustomError(f.schemes, "SpendPolicyInvalidChannel");
      }
      const d = await f.deposit(usdc(1), { ...base(), receiver: ZeroAddress });
      await expect(d.tx).to.be.revertedWithCustomError(f.schemes, "SpendPolicyInvalidChannel");
    });

    it("applies the per-payment limit and the daily budget to deposits as to payments", async function () {
      const f = await loadFixture(fixture);
      const big = await f.deposit(usdc(6));
      await expect(big.tx)
        .to.emit(f.schemes, "PaymentBlocked")
        .withArgs(...blockedArgs(big.id, f.agent, HOST, usdc(6), 2));
      for (let i = 0; i < 4; i++) await (await (await f.deposit(usdc(3))).tx).wait();
      expect(await f.policy.spentToday()).to.equal(usdc(12));
      const over = await f.deposit(1n);
      await expect(over.tx)
        .to.emit(f.schemes, "PaymentBlocked")
        .withArgs(...blockedArgs(over.id, f.agent, HOST, 1n, 3));
    });

    it("lets only the operator authorise, and only once per paymentId", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(1));
      await (await d.tx).wait();
      const values = { ...d.values, nonceSalt: ethers.hexlify(ethers.randomBytes(32)) };
      await expect(
        f.schemes.connect(f.operator).authorizeDeposit(d.id, HOST, f.leaf, f.proof, d.config, values, NO_APPROVAL),
      ).to.be.revertedWithCustomError(f.schemes, "SpendPolicyPaymentExists");
      await expect(
        f.schemes.connect(f.other).authorizeDeposit(paymentId(), HOST, f.leaf, f.proof, d.config, values, NO_APPROVAL),
      ).to.be.revertedWithCustomError(f.schemes, "SpendPolicyUnauthorizedOperator");
    });

    it("keeps one pending deposit per channel: a top-up waits until the last deposit landed or was credited", async function () {
      const f = await loadFixture(fixture);
      const first = await f.deposit(usdc(1));
      await (await first.tx).wait();
      const early = await f.deposit(usdc(1), first.config);
      await expect(early.tx).to.be.revertedWithCustomError(f.schemes, "SpendPolicyDepositPending").withArgs(first.channelId, first.id);
      await (await first.land()).wait();
      const topUp = await f.deposit(usdc(1), first.config);
      await (await topUp.tx).wait();
      expect((await f.schemes.channelState(first.channelId)).deposited).to.equal(usdc(2));
    });
  });

  describe("vouchers", function () {
    it("answers the stock client's Voucher of the authorised channel for any cumulative amount (the channel bounds claims)", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(2));
      await (await d.tx).wait();
      for (const amount of ["1", usdc(2).toString(), usdc(1_000_000).toString()]) {
        const v = await voucherOf(d, d.channelId, amount);
        expect(v.message).to.deep.equal({ channelId: d.channelId, maxClaimableAmount: BigInt(amount) });
        expect(await answer(f, v), amount).to.equal(MAGIC);
      }
      // The seller claims with a voucher of a million USDC: the channel pays no more than the deposit.
      await (await d.land()).wait();
      await expect(f.claim(d.config, usdc(2) + 1n, usdc(1_000_000))).to.be.revertedWithCustomError(f.batch, "ClaimExceedsBalance");
      await expect(f.claim(d.config, usdc(2), usdc(1_000_000)))
        .to.emit(f.batch, "Claimed")
        .withArgs(d.channelId, f.deployer.address, usdc(2), usdc(2));
      await expect(f.settle()).to.changeTokenBalance(f.token, f.merchant, usdc(2));
    });

    it("answers no voucher of a channel it never funded, of a blocked channel, nor one whose amount or signer was changed", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(2));
      await (await d.tx).wait();
      const other = channelIdOf(channelConfig(f.agent, f.merchant.address, f.tokenAddress));
      expect(await answer(f, await voucherOf(d, other, "5"))).to.equal(INVALID);
      const blocked = await f.deposit(usdc(1), channelConfig(f.agent, ethers.Wallet.createRandom().address, f.tokenAddress));
      await (await blocked.tx).wait();
      expect(await answer(f, await voucherOf(blocked, blocked.channelId, "5"))).to.equal(INVALID);
      const five = await voucherOf(d, d.channelId, "5");
      const six = await voucherOf(d, d.channelId, "6");
      expect(await f.policy.isValidSignature(six.digest, five.signature)).to.equal(INVALID);
      const thief = { signer: walletClientSigner(f.agent, ethers.Wallet.createRandom(), paymentId), log: [] as Signed[] };
      thief.signer = walletClientSigner(f.agent, ethers.Wallet.createRandom(), paymentId, thief.log);
      expect(await answer(f, await voucherOf(thief, d.channelId, "5"))).to.equal(INVALID);
    });

    it("stops answering vouchers and the deposit at a pause; after a resume only a top-up under the policy revives the channel", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(2));
      await (await d.tx).wait();
      const v = await voucherOf(d, d.channelId, "7");
      expect(await answer(f, v)).to.equal(MAGIC);
      await f.setPaused(true);
      expect(await answer(f, v)).to.equal(INVALID);
      expect(await answer(f, d.receive)).to.equal(INVALID);
      // Nor can the deposit land, so nothing is claimed from this channel while paused.
      await expect(d.land()).to.be.reverted;
      const paused = await f.deposit(usdc(1), d.config);
      await expect(paused.tx)
        .to.emit(f.schemes, "PaymentBlocked")
        .withArgs(...blockedArgs(paused.id, f.agent, HOST, usdc(1), 4));
      await f.setPaused(false);
      expect(await answer(f, v)).to.equal(INVALID);
      const topUp = await f.deposit(usdc(1), d.config);
      await (await topUp.tx).wait();
      expect(await answer(f, v)).to.equal(MAGIC);
      await (await topUp.land()).wait();
      // A pause stops the channel accepting the wallet's vouchers: the seller's claim fails, then passes after a resume.
      await f.setPaused(true);
      await expect(f.claim(d.config, 7n)).to.be.revertedWithCustomError(f.batch, "InvalidSignature");
      await f.setPaused(false);
      const revive = await f.deposit(usdc(1), d.config);
      await (await revive.tx).wait();
      await expect(f.claim(d.config, 7n)).to.emit(f.batch, "Claimed");
    });
  });

  describe("credits", function () {
    it("credits what a refund brought back to the windows it was taken from, once, and not what the seller claimed", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(3));
      await (await d.tx).wait();
      await (await d.land()).wait();
      await expect(f.schemes.connect(f.operator).creditChannel(d.id))
        .to.be.revertedWithCustomError(f.schemes, "SpendPolicyNothingToCredit")
        .withArgs(d.id);
      // The seller claims 1 USDC with the wallet's voucher and is paid; its authorizer refunds the rest (2: a refund
      // asked for more is capped at what is unclaimed).
      await (await f.claim(d.config, usdc(1))).wait();
      await (await f.settle()).wait();
      await expect(f.refund(d.config, usdc(5))).to.changeTokenBalance(f.token, f.agent, usdc(2));
      expect(await f.onChain(d.channelId)).to.deep.equal({ balance: usdc(1), totalClaimed: usdc(1) });
      await expect(f.schemes.connect(f.operator).creditChannel(d.id))
        .to.emit(f.schemes, "PaymentReleased")
        .withArgs(d.id, f.agent, usdc(2), usdc(1))
        .and.to.emit(f.schemes, "SchemeCredited")
        .withArgs(d.id, BATCH, d.channelId, usdc(2), usdc(2));
      expect(await f.policy.spentToday()).to.equal(usdc(1));
      expect((await f.schemes.channelState(d.channelId)).credited).to.equal(usdc(2));
      await expect(f.schemes.connect(f.operator).creditChannel(d.id))
        .to.be.revertedWithCustomError(f.schemes, "SpendPolicyUnknownSchemePayment")
        .withArgs(d.id);
    });

    it("credits a deposit that never landed in full and kills it: the refunded authorisation can never be used", async function () {
      const f = await loadFixture(fixture);
      const d = await f.deposit(usdc(3));
      await (await d.tx).wait();
      await (await f.schemes.connect(f.operator).creditChannel(d.id)).wait();
      expect(await f.policy.spentToday()).to.equal(0n);
      expect(await answer(f, d.receive)).to.equal(INVALID);
      await expect(d.land()).to.be.reverted;
    });

    it("leaves alone another channel's deposit that reuses the id of a channel's credited latest deposit", async function () {
      const f = await loadFixture(fixture);
      const a0 = await f.deposit(usdc(2));
      await (await a0.tx).wait();
      await (await a0.land()).wait();
      const a1 = await f.deposit(usdc(1), a0.config);
      await (await a1.tx).wait();
      await (await f.schemes.connect(f.operator).creditChannel(a1.id)).wait();
      const b = await f.deposit(usdc(1), channelConfig(f.agent, f.merchant.address, f.tokenAddress), a1.id);
      await (await b.tx).wait();
      await (await f.refund(a0.config, usdc(1))).wait();
      await expect(f.schemes.connect(f.operator).creditChannel(a0.id))
        .to.emit(f.schemes, "SchemeCredited")
        .withArgs(a0.id, BATCH, a0.channelId, usdc(1), usdc(2));
      expect(await answer(f, b.receive)).to.equal(MAGIC);
      await expect(b.land()).to.changeTokenBalance(f.token, f.agent, -usdc(1));
    });

    it("credits no deposit twice for one refund, whichever deposit of the channel a stolen operator names", async function () {
      const f = await loadFixture(fixture);
      const a = await f.deposit(usdc(3));
      await (await a.tx).wait();
      await (await a.land()).wait();
      const b = await f.deposit(usdc(2), a.config);
      await (await b.tx).wait();
      await (await b.land()).wait();
      await (await f.refund(a.config, usdc(2))).wait();
      expect(await f.onChain(a.channelId)).to.deep.equal({ balance: usdc(3), totalClaimed: 0n });
      await expect(f.schemes.connect(f.operator).creditChannel(a.id))
        .to.emit(f.schemes, "SchemeCredited")
        .withArgs(a.id, BATCH, a.channelId, usdc(2), usdc(2));
      await expect(f.schemes.connect(f.operator).creditChannel(b.id)).to.be.revertedWithCustomError(
        f.schemes,
        "SpendPolicyNothingToCredit",
      );
      expect(await f.policy.spentToday()).to.equal(usdc(3));
      await expect(f.schemes.connect(f.other).creditChannel(b.id)).to.be.revertedWithCustomError(
        f.schemes,
        "SpendPolicyUnauthorizedOperator",
      );
    });
  });
});

/** The stock client's Voucher for `amount` on `channelId`, signed by `who`'s signer (the wallet's format), with its digest. */
async function voucherOf(who: { signer: ReturnType<typeof walletClientSigner>; log: Signed[] }, channelId: string, amount: string) {
  await signVoucher(who.signer, channelId as `0x${string}`, amount, NETWORK);
  return who.log[who.log.length - 1];
}
