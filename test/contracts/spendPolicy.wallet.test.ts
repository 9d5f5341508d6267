import { expect } from "chai";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import {
  nextTimestamp,
  paymentId,
  policyFixture,
  signSetOwner,
  signSetPaused,
  signTransfer,
  signWithdraw,
  transferOf,
  usdc,
  type TransferValues,
} from "../helpers/policyFixture";

const { ethers } = hre;
const MAGIC = "0x1626ba7e";
const INVALID = "0xffffffff";

/** The agent wallet: ERC-1271 for authorised transfers only, release rules, the owner's withdraw and handover. */
describe("SpendPolicy as the agent's wallet", function () {
  async function walletFixture() {
    const f = await policyFixture();
    const digestOf = (id: string, t: TransferValues) => f.policy.transferDigest(id, t);
    /** transferWithAuthorization (bytes overload) from the wallet, as a facilitator settles it. */
    const settle = async (id: string, t: TransferValues, signature?: string) =>
      f.token
        .connect(f.other)
        ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
          f.agent,
          t.payTo,
          t.amount,
          t.validAfter,
          t.validBefore,
          id,
          signature ?? (await signTransfer(f.agentKey, f.token, f.agent, id, t)),
        );
    return { ...f, digestOf, settle };
  }

  describe("ERC-1271", function () {
    it("answers valid only for the exact authorised transfer, signed by the agent's signing key", async function () {
      const { policy, pay, transfers, agentKey, token, agent, digestOf } = await loadFixture(walletFixture);
      const id = paymentId();
      await pay(usdc(1), "api.example.com", { id });
      const t = transfers.get(id)!;
      const sig = await signTransfer(agentKey, token, agent, id, t);
      expect(await policy.isValidSignature(await digestOf(id, t), sig)).to.equal(MAGIC);
      const variants: TransferValues[] = [
        { ...t, payTo: ethers.Wallet.createRandom().address },
        { ...t, amount: t.amount + 1n },
        { ...t, validAfter: 1n },
        { ...t, validBefore: t.validBefore + 1n },
      ];
      for (const v of variants) {
        expect(await policy.isValidSignature(await digestOf(id, v), await signTransfer(agentKey, token, agent, id, v))).to.equal(INVALID);
      }
      // Another nonce, another signer, other lengths.
      const other = paymentId();
      expect(await policy.isValidSignature(await digestOf(other, t), await signTransfer(agentKey, token, agent, other, t))).to.equal(
        INVALID,
      );
      const stranger = ethers.Wallet.createRandom();
      expect(await policy.isValidSignature(await digestOf(id, t), await signTransfer(stranger, token, agent, id, t))).to.equal(INVALID);
      expect(await policy.isValidSignature(await digestOf(id, t), sig.slice(0, -2))).to.equal(INVALID);
      expect(await policy.isValidSignature(await digestOf(id, t), sig + "00")).to.equal(INVALID);
      expect(await policy.isValidSignature(await digestOf(id, t), "0x")).to.equal(INVALID);
    });

    it("answers invalid while paused, also for a transfer authorised before the pause, so nothing settles", async function () {
      const { policy, pay, release, transfers, agentKey, token, agent, digestOf, settle, other, owner } = await loadFixture(walletFixture);
      const id = paymentId();
      await pay(usdc(1), "api.example.com", { id });
      const t = transfers.get(id)!;
      const sig = await signTransfer(agentKey, token, agent, id, t);
      expect(await policy.isValidSignature(await digestOf(id, t), sig)).to.equal(MAGIC);
      const ts = await nextTimestamp();
      await policy.connect(other).setPaused(true, 0n, ts, await signSetPaused(owner, agent, agent, true, ts));
      expect(await policy.isValidSignature(await digestOf(id, t), sig)).to.equal(INVALID);
      await expect(settle(id, t)).to.be.revertedWith("FiatTokenV2: invalid signature");
      // The operator can still give the budget back while paused.
      await expect(release(id)).to.emit(policy, "PaymentReleased");
    });

    it("lets USDC settle exactly the authorised transfer, once, and nothing else", async function () {
      const { token, agent, pay, transfers, settle, merchant } = await loadFixture(walletFixture);
      const before = await token.balanceOf(agent);
      const id = paymentId();
      await pay(usdc(2), "api.example.com", { id });
      const t = transfers.get(id)!;
      await expect(settle(id, { ...t, amount: usdc(3) })).to.be.revertedWith("FiatTokenV2: invalid signature");
      await expect(settle(id, t)).to.emit(token, "AuthorizationUsed").withArgs(agent, id);
      expect(await token.balanceOf(agent)).to.equal(before - usdc(2));
      expect(await token.balanceOf(merchant.address)).to.equal(usdc(2));
      await expect(settle(id, t)).to.be.revertedWith("FiatTokenV2: authorization is used or canceled");
      await expect(settle(paymentId(), t)).to.be.revertedWith("FiatTokenV2: invalid signature");
    });

    it("refuses USDC permit and cancelAuthorization in the wallet's name", async function () {
      const { token, agent, agentKey, other, pay, transfers } = await loadFixture(walletFixture);
      const id = paymentId();
      await pay(1n, "api.example.com", { id });
      const sig = await signTransfer(agentKey, token, agent, id, transfers.get(id)!);
      const deadline = BigInt(await time.latest()) + 600n;
      await expect(
        token.connect(other)["permit(address,address,uint256,uint256,bytes)"](agent, other.address, usdc(50), deadline, sig),
      ).to.be.revertedWith("FiatTokenV2: invalid signature");
      await expect(token.connect(other)["cancelAuthorization(address,bytes32,bytes)"](agent, id, sig)).to.be.revertedWith(
        "FiatTokenV2: invalid signature",
      );
    });
  });

  describe("release", function () {
    it("is refused once USDC has used the nonce (a settled payment can never refill the budget)", async function () {
      const { policy, pay, release, transfers, settle } = await loadFixture(walletFixture);
      const id = paymentId();
      await pay(usdc(3), "api.example.com", { id });
      await settle(id, transfers.get(id)!);
      await expect(release(id)).to.be.revertedWithCustomError(policy, "SpendPolicyPaymentSettled").withArgs(id);
      expect(await policy.spentToday()).to.equal(usdc(3));
    });

    it("kills the authorisation: the released transfer can never settle", async function () {
      const { policy, pay, release, transfers, settle, digestOf, agentKey, token, agent } = await loadFixture(walletFixture);
      const id = paymentId();
      await pay(usdc(3), "api.example.com", { id });
      const t = transfers.get(id)!;
      const sig = await signTransfer(agentKey, token, agent, id, t);
      await release(id);
      expect(await policy.isValidSignature(await digestOf(id, t), sig)).to.equal(INVALID);
      await expect(settle(id, t, sig)).to.be.revertedWith("FiatTokenV2: invalid signature");
    });

    it("needs the authorised transfer's exact fields (no refund of a larger amount)", async function () {
      const { policy, pay, release, transfers } = await loadFixture(walletFixture);
      const id = paymentId();
      await pay(usdc(1), "api.example.com", { id });
      const t = transfers.get(id)!;
      await expect(release(id, { transfer: { ...t, amount: usdc(5) } })).to.be.revertedWithCustomError(policy, "SpendPolicyUnknownPayment");
      await expect(release(id, { transfer: { ...t, payTo: ethers.Wallet.createRandom().address } })).to.be.revertedWithCustomError(
        policy,
        "SpendPolicyUnknownPayment",
      );
      expect(await policy.spentToday()).to.equal(usdc(1));
    });
  });

  describe("transfer checks", function () {
    it("reverts SpendPolicyInvalidTransfer for an expired, too long, inverted, zero or self-paying transfer", async function () {
      const { policy, pay, agent } = await loadFixture(walletFixture);
      const now = BigInt(await time.latest());
      const base = await transferOf(1n, ethers.Wallet.createRandom().address);
      const bad: TransferValues[] = [
        { ...base, validBefore: now },
        // Well past the hour from any block this may land in (a loaded machine mines seconds after `now`).
        { ...base, validBefore: now + 3700n },
        { ...base, validAfter: base.validBefore },
        { ...base, payTo: ethers.ZeroAddress },
        { ...base, payTo: agent },
        { ...base, amount: 2n ** 64n },
      ];
      for (const transfer of bad) {
        await expect(pay(transfer.amount, "api.example.com", { transfer })).to.be.revertedWithCustomError(
          policy,
          "SpendPolicyInvalidTransfer",
        );
      }
      await expect(pay(1n, "api.example.com", { transfer: { ...base, validBefore: now + 3600n } })).to.emit(policy, "PaymentAuthorized");
    });
  });

  describe("kill switch", function () {
    it("takes a pause signed now even after a resume dated 15 minutes ahead", async function () {
      const { policy, agent, owner, other, pay } = await loadFixture(walletFixture);
      const now = BigInt(await time.latest());
      const ahead = now + 900n;
      const epoch = await policy.epoch();
      await policy.connect(other).setPaused(false, epoch, ahead, await signSetPaused(owner, agent, agent, false, ahead, epoch));
      const ts = now + 1n;
      await expect(policy.connect(other).setPaused(true, 0n, ts, await signSetPaused(owner, agent, agent, true, ts)))
        .to.emit(policy, "PausedSet")
        .withArgs(agent, true, anyValue, ts, anyValue);
      await expect(pay(1n)).to.emit(policy, "PaymentBlocked");
    });

    it("does not let a resume signed before a pause undo it", async function () {
      const { policy, agent, owner, other } = await loadFixture(walletFixture);
      const early = await nextTimestamp();
      const heldEpoch = await policy.epoch();
      const heldResume = await signSetPaused(owner, agent, agent, false, early, heldEpoch);
      await time.increase(5);
      const ts = await nextTimestamp();
      await policy.connect(other).setPaused(true, 0n, ts, await signSetPaused(owner, agent, agent, true, ts));
      await expect(policy.connect(other).setPaused(false, heldEpoch, early, heldResume))
        .to.be.revertedWithCustomError(policy, "SpendPolicyStaleEpoch")
        .withArgs(heldEpoch, heldEpoch + 1n);
      expect(await policy.paused()).to.equal(true);
    });
  });

  describe("withdraw", function () {
    it("moves USDC, ETH and another ERC-20 with the owner's signature, relayed by anyone, also while paused", async function () {
      const { policy, agent, owner, other, token } = await loadFixture(walletFixture);
      const ts0 = await nextTimestamp();
      await policy.connect(other).setPaused(true, 0n, ts0, await signSetPaused(owner, agent, agent, true, ts0));
      const to = ethers.Wallet.createRandom().address;
      const usdcW = { token: await token.getAddress(), to, amount: usdc(10), timestamp: await nextTimestamp() };
      await expect(policy.connect(other).withdraw(usdcW.token, to, usdcW.amount, usdcW.timestamp, await signWithdraw(owner, agent, usdcW)))
        .to.emit(policy, "Withdrawn")
        .withArgs(agent, usdcW.token, to, usdc(10), usdcW.timestamp, anyValue);
      expect(await token.balanceOf(to)).to.equal(usdc(10));

      await other.sendTransaction({ to: agent, value: 5000n });
      const ethW = { token: ethers.ZeroAddress, to, amount: 5000n, timestamp: await nextTimestamp() };
      await policy.connect(other).withdraw(ethW.token, to, ethW.amount, ethW.timestamp, await signWithdraw(owner, agent, ethW));
      expect(await ethers.provider.getBalance(to)).to.equal(5000n);

      const eurc = await ethers.deployContract("TestUSDC");
      await eurc.mint(agent, 77n);
      const otherW = { token: await eurc.getAddress(), to, amount: 77n, timestamp: await nextTimestamp() };
      await policy.connect(other).withdraw(otherW.token, to, otherW.amount, otherW.timestamp, await signWithdraw(owner, agent, otherW));
      expect(await eurc.balanceOf(to)).to.equal(77n);
    });

    it("refuses a replay, a stale or far-future timestamp and anyone but the owner", async function () {
      const { policy, agent, owner, other, operator, token } = await loadFixture(walletFixture);
      const w = { token: await token.getAddress(), to: other.address, amount: 1n, timestamp: await nextTimestamp() };
      const sig = await signWithdraw(owner, agent, w);
      await policy.withdraw(w.token, w.to, w.amount, w.timestamp, sig);
      await expect(policy.withdraw(w.token, w.to, w.amount, w.timestamp, sig)).to.be.revertedWithCustomError(
        policy,
        "SpendPolicySignatureUsed",
      );
      for (const by of [operator, other]) {
        const x = { ...w, timestamp: await nextTimestamp() };
        await expect(policy.withdraw(x.token, x.to, x.amount, x.timestamp, await signWithdraw(by, agent, x))).to.be.revertedWithCustomError(
          policy,
          "SpendPolicyInvalidSignature",
        );
      }
      const old = { ...w, timestamp: BigInt(await time.latest()) - 901n };
      await expect(
        policy.withdraw(old.token, old.to, old.amount, old.timestamp, await signWithdraw(owner, agent, old)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicyTimestampOutOfWindow");
    });
  });

  describe("setOwner", function () {
    it("hands every owner power to the new owner at once; the old owner's signatures stop working", async function () {
      const { policy, agent, owner, other, token } = await loadFixture(walletFixture);
      const heir = ethers.Wallet.createRandom().connect(ethers.provider);
      const ts = await nextTimestamp();
      const sig = await signSetOwner(owner, agent, heir.address, ts);
      await expect(policy.connect(other).setOwner(heir.address, ts, sig))
        .to.emit(policy, "OwnerSet")
        .withArgs(agent, heir.address, ts, anyValue);
      expect(await policy.owner()).to.equal(heir.address);
      await expect(policy.setOwner(heir.address, ts, sig)).to.be.revertedWithCustomError(policy, "SpendPolicyStaleTimestamp");
      const w = { token: await token.getAddress(), to: owner.address, amount: 1n, timestamp: await nextTimestamp() };
      await expect(
        policy.withdraw(w.token, w.to, w.amount, w.timestamp, await signWithdraw(owner, agent, w)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
      await policy.withdraw(w.token, w.to, w.amount, w.timestamp, await signWithdraw(heir, agent, w));
    });
  });
});
