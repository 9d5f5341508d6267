import { expect } from "chai";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { allowlistRoot, merchantsOf } from "../../src/policy/allowlist";
import { NO_EXTRA_LIMITS } from "../../src/chain/typedData";
import {
  CHAIN_ID,
  DEFAULT_POLICY,
  type PolicyValues,
  nextTimestamp,
  policyFixture,
  signSetOperator,
  signSetPaused,
  signSetPolicy,
  usdc,
  policyTuple,
} from "../helpers/policyFixture";

const NEW_POLICY: PolicyValues = {
  perTxLimit: usdc(50),
  dailyBudget: usdc(200),
  merchants: merchantsOf(["*.openai.com", "api.example.com"]),
  approvalThreshold: usdc(25),
  ...NO_EXTRA_LIMITS,
};

describe("SpendPolicy owner-signed changes", function () {
  describe("updatePolicy", function () {
    it("applies a policy signed by the owner and relayed by anyone, and emits PolicyUpdated", async function () {
      const { policy, policyAddress, agent, owner, other } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const sig = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, ts);
      await expect(policy.connect(other).updatePolicy(NEW_POLICY, ts, sig))
        .to.emit(policy, "PolicyUpdated")
        .withArgs(agent, 2n, policyTuple(NEW_POLICY), allowlistRoot(["*.openai.com", "api.example.com"]), ts, anyValue);
      const stored = await policy.policy();
      expect([stored.perTxLimit, stored.dailyBudget, stored.allowlistRoot, stored.approvalThreshold]).to.deep.equal([
        NEW_POLICY.perTxLimit,
        NEW_POLICY.dailyBudget,
        allowlistRoot(["*.openai.com", "api.example.com"]),
        NEW_POLICY.approvalThreshold,
      ]);
      expect(await policy.lastTimestamp(0)).to.equal(ts);
    });

    it("rejects a replay of an accepted signature as stale", async function () {
      const { policy, policyAddress, agent, owner } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const sig = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, ts);
      await policy.updatePolicy(NEW_POLICY, ts, sig);
      await expect(policy.updatePolicy(NEW_POLICY, ts, sig))
        .to.be.revertedWithCustomError(policy, "SpendPolicyStaleTimestamp")
        .withArgs(ts, ts);
    });

    it("rejects a signature older than the last accepted one as stale", async function () {
      const { policy, policyAddress, agent, owner } = await loadFixture(policyFixture);
      const older = await nextTimestamp();
      const olderSig = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, older);
      const newer = older + 5n;
      const newerSig = await signSetPolicy(owner, policyAddress, agent, DEFAULT_POLICY, newer);
      await time.setNextBlockTimestamp(newer);
      await policy.updatePolicy(DEFAULT_POLICY, newer, newerSig);
      await expect(policy.updatePolicy(NEW_POLICY, older, olderSig))
        .to.be.revertedWithCustomError(policy, "SpendPolicyStaleTimestamp")
        .withArgs(older, newer);
    });

    it("accepts a timestamp exactly SIGNATURE_WINDOW (15 minutes) ahead and rejects one a second further", async function () {
      const { policy, policyAddress, agent, owner } = await loadFixture(policyFixture);
      expect(await policy.SIGNATURE_WINDOW()).to.equal(900n);
      const blockTs = BigInt(await time.latest()) + 10n;
      const tooFar = blockTs + 901n;
      const sigFar = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, tooFar);
      await time.setNextBlockTimestamp(blockTs);
      await expect(policy.updatePolicy(NEW_POLICY, tooFar, sigFar))
        .to.be.revertedWithCustomError(policy, "SpendPolicyTimestampOutOfWindow")
        .withArgs(tooFar, blockTs);

      const edge = blockTs + 1n + 900n;
      const sigEdge = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, edge);
      await time.setNextBlockTimestamp(blockTs + 1n);
      await expect(policy.updatePolicy(NEW_POLICY, edge, sigEdge)).to.emit(policy, "PolicyUpdated");
    });

    it("rejects a far-future timestamp", async function () {
      const { policy, policyAddress, agent, owner } = await loadFixture(policyFixture);
      const ts = BigInt(await time.latest()) + 86_400n * 365n;
      const sig = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, ts);
      await expect(policy.updatePolicy(NEW_POLICY, ts, sig)).to.be.revertedWithCustomError(policy, "SpendPolicyTimestampOutOfWindow");
    });

    it("rejects a signature more than 15 minutes old even though it is newer than the last one", async function () {
      const { policy, policyAddress, agent, owner } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const sig = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, ts);
      await time.setNextBlockTimestamp(ts + 901n);
      await expect(policy.updatePolicy(NEW_POLICY, ts, sig))
        .to.be.revertedWithCustomError(policy, "SpendPolicyTimestampOutOfWindow")
        .withArgs(ts, ts + 901n);
    });

    it("rejects a signature by another key, or over other values", async function () {
      const { policy, policyAddress, agent, owner, other } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const wrongSigner = await signSetPolicy(other, policyAddress, agent, NEW_POLICY, ts);
      await expect(policy.updatePolicy(NEW_POLICY, ts, wrongSigner)).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
      const signed = await signSetPolicy(owner, policyAddress, agent, NEW_POLICY, ts);
      const loosened = { ...NEW_POLICY, dailyBudget: NEW_POLICY.dailyBudget * 10n };
      await expect(policy.updatePolicy(loosened, ts, signed)).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
      await expect(policy.updatePolicy(NEW_POLICY, ts, "0x")).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
    });

    it("rejects a signature made for another policy contract (the domain names the policy)", async function () {
      const { policy, walletPolicy, agent, owner } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const sig = await signSetPolicy(owner, await walletPolicy.getAddress(), agent, NEW_POLICY, ts);
      await expect(policy.updatePolicy(NEW_POLICY, ts, sig)).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
    });

    it("rejects limits that do not fit in 64 bits (18 trillion USDC)", async function () {
      const { policy, policyAddress, agent, owner } = await loadFixture(policyFixture);
      const max96 = 2n ** 64n - 1n;
      const ts = await nextTimestamp();
      const fits = { ...NEW_POLICY, perTxLimit: max96, dailyBudget: max96, approvalThreshold: max96 };
      for (const key of ["perTxLimit", "dailyBudget", "approvalThreshold"] as const) {
        const values = { ...fits, [key]: max96 + 1n };
        const sig = await signSetPolicy(owner, policyAddress, agent, values, ts);
        await expect(policy.updatePolicy(values, ts, sig)).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidPolicy");
      }
      const sig = await signSetPolicy(owner, policyAddress, agent, fits, ts);
      await expect(policy.updatePolicy(fits, ts, sig)).to.emit(policy, "PolicyUpdated");
    });
  });

  describe("setPaused", function () {
    it("pauses and resumes with owner signatures, emitting PausedSet, with its own timestamp sequence", async function () {
      const { policy, policyAddress, agent, owner, other } = await loadFixture(policyFixture);
      const policyTs = await policy.lastTimestamp(0);
      const ts = await nextTimestamp();
      const sig = await signSetPaused(owner, policyAddress, agent, true, ts);
      await expect(policy.connect(other).setPaused(true, 0n, ts, sig))
        .to.emit(policy, "PausedSet")
        .withArgs(agent, true, anyValue, ts, anyValue);
      expect(await policy.paused()).to.equal(true);
      expect(await policy.lastTimestamp(1)).to.equal(ts);
      expect(await policy.lastTimestamp(0)).to.equal(policyTs);

      // A pause is single use (a resume is ordered by timestamp instead).
      await expect(policy.setPaused(true, 0n, ts, sig)).to.be.revertedWithCustomError(policy, "SpendPolicySignatureUsed");
      const ts2 = await nextTimestamp();
      const epoch = await policy.epoch();
      const sig2 = await signSetPaused(owner, policyAddress, agent, false, ts2, epoch);
      await expect(policy.setPaused(false, epoch, ts2, sig2))
        .to.emit(policy, "PausedSet")
        .withArgs(agent, false, anyValue, ts2, anyValue);
      expect(await policy.paused()).to.equal(false);
    });

    it("rejects a pause signed by another key, or a resume signature used to pause", async function () {
      const { policy, policyAddress, agent, owner, other } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      await expect(
        policy.setPaused(true, 0n, ts, await signSetPaused(other, policyAddress, agent, true, ts)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
      await expect(
        policy.setPaused(true, 0n, ts, await signSetPaused(owner, policyAddress, agent, false, ts)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
    });

    it("keeps the policy values while paused and after resuming", async function () {
      const { policy, setPaused } = await loadFixture(policyFixture);
      const before = await policy.policy();
      await setPaused(true);
      await setPaused(false);
      expect(await policy.policy()).to.deep.equal(before);
    });
  });

  describe("setOperator", function () {
    it("rotates the operator: the new one authorises, the old one is refused", async function () {
      const { policy, policyAddress, agent, owner, operator, other, pay } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const sig = await signSetOperator(owner, policyAddress, agent, other.address, ts);
      await expect(policy.setOperator(other.address, ts, sig))
        .to.emit(policy, "OperatorSet")
        .withArgs(agent, other.address, ts, anyValue);
      expect(await policy.operator()).to.equal(other.address);
      expect(await policy.lastTimestamp(2)).to.equal(ts);

      await expect(pay(1n)).to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator").withArgs(operator.address);
      await expect(pay(1n, "api.example.com", { from: other })).to.emit(policy, "PaymentAuthorized");
    });

    it("rejects the zero address and a signature by another key", async function () {
      const { policy, policyAddress, agent, owner, other } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const zero = hre.ethers.ZeroAddress;
      await expect(
        policy.setOperator(zero, ts, await signSetOperator(owner, policyAddress, agent, zero, ts)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicyZeroAddress");
      await expect(
        policy.setOperator(other.address, ts, await signSetOperator(other, policyAddress, agent, other.address, ts)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
    });
  });

  describe("with an ERC-1271 contract owner", function () {
    it("accepts a policy update signed by the wallet's signer and rejects one by another key", async function () {
      const { walletPolicy, walletAddress, walletSigner, agent2, owner } = await loadFixture(policyFixture);
      expect(await walletPolicy.owner()).to.equal(walletAddress);
      const address = await walletPolicy.getAddress();
      const ts = await nextTimestamp();
      const bad = await signSetPolicy(owner, address, agent2, NEW_POLICY, ts);
      await expect(walletPolicy.updatePolicy(NEW_POLICY, ts, bad)).to.be.revertedWithCustomError(
        walletPolicy,
        "SpendPolicyInvalidSignature",
      );
      const good = await signSetPolicy(walletSigner, address, agent2, NEW_POLICY, ts);
      await expect(walletPolicy.updatePolicy(NEW_POLICY, ts, good))
        .to.emit(walletPolicy, "PolicyUpdated")
        .withArgs(agent2, 2n, policyTuple(NEW_POLICY), anyValue, ts, anyValue);
    });

    it("accepts a pause signed by the wallet's signer", async function () {
      const { walletPolicy, walletSigner, agent2 } = await loadFixture(policyFixture);
      const ts = await nextTimestamp();
      const sig = await signSetPaused(walletSigner, await walletPolicy.getAddress(), agent2, true, ts);
      await expect(walletPolicy.setPaused(true, 0n, ts, sig))
        .to.emit(walletPolicy, "PausedSet")
        .withArgs(agent2, true, anyValue, ts, anyValue);
    });
  });

  describe("EIP-712 domain", function () {
    it("uses {SpendGate, 1, chain id, the policy's address}", async function () {
      const { policy, policyAddress } = await loadFixture(policyFixture);
      const expected = hre.ethers.TypedDataEncoder.hashDomain({
        name: "SpendGate",
        version: "1",
        chainId: CHAIN_ID,
        verifyingContract: policyAddress,
      });
      expect(await policy.domainSeparator()).to.equal(expected);
      const domain = await policy.eip712Domain();
      expect([domain.name, domain.version, domain.chainId, domain.verifyingContract]).to.deep.equal([
        "SpendGate",
        "1",
        CHAIN_ID,
        policyAddress,
      ]);
    });
  });
});
