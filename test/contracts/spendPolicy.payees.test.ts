import { expect } from "chai";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import hre from "hardhat";
import type { ContractTransactionResponse } from "ethers";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { allowlistRoot, merchantsOf } from "../../src/policy/allowlist";
import {
  rootSlot,
  ALLOWLIST,
  ANY_PAYEE,
  DEFAULT_POLICY,
  NO_APPROVAL,
  deployAgentFor,
  leafOf,
  blockedArgs,
  merchantHash,
  nextTimestamp,
  paymentId,
  policyFixture,
  proofFor,
  signApproval,
  signSetOperator,
  signSetOwner,
  signSetPaused,
  signSetPolicy,
  signTransfer,
  signWithdraw,
  transferOf,
  usdc,
  type TransferValues,
} from "../helpers/policyFixture";

const { ethers } = hre;
const MAGIC = "0x1626ba7e";
const INVALID = "0xffffffff";
const HOST = "api.example.com";

/** Payees in allowlist leaves, approvals bound to payTo, authorisation epochs, self addresses, owner-bound agents. */
describe("SpendPolicy payees, epochs and owner-bound agents", function () {
  async function payeesFixture() {
    const f = await policyFixture();
    const P = f.merchant.address;
    const Q = ethers.Wallet.createRandom().address;
    const payees = { [HOST]: P };
    const caps = { [HOST]: usdc(4) };
    const merchants = merchantsOf(ALLOWLIST, caps, payees);
    const settle = async (id: string, t: TransferValues) =>
      f.token
        .connect(f.other)
        ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
          f.agent,
          t.payTo,
          t.amount,
          t.validAfter,
          t.validBefore,
          id,
          await signTransfer(f.agentKey, f.token, f.agent, id, t),
        );
    const walletAnswer = async (id: string) => {
      const t = f.transfers.get(id)!;
      return f.policy.isValidSignature(await f.policy.transferDigest(id, t), await signTransfer(f.agentKey, f.token, f.agent, id, t));
    };
    return { ...f, P, Q, payees, caps, merchants, settle, walletAnswer };
  }

  describe("payees", function () {
    it("authorises a payment to the leaf's payee and reports the leaf (entry, cap, payee) in PaymentAuthorized", async function () {
      const { policy, agent, pay, setPolicy, P, payees, caps, merchants } = await loadFixture(payeesFixture);
      await setPolicy({ merchants });
      const id = paymentId();
      await expect(pay(1n, HOST, { id, payees, caps }))
        .to.emit(policy, "PaymentAuthorized")
        .withArgs(id, agent, merchantHash(HOST), HOST, P, 1n, anyValue, anyValue, 1n, anyValue, HOST, usdc(4), P);
      expect(await policy.paymentState(id)).to.equal(1n);
    });

    it("blocks a payment to another address with payee_not_allowed (14), without reverting or recording it", async function () {
      const { policy, agent, pay, setPolicy, Q, payees, caps, merchants } = await loadFixture(payeesFixture);
      await setPolicy({ merchants });
      const id = paymentId();
      await expect(pay(1n, HOST, { id, payees, caps, transfer: await transferOf(1n, Q) }))
        .to.emit(policy, "PaymentBlocked")
        .withArgs(...blockedArgs(id, agent, HOST, 1n, 14));
      expect(await policy.paymentState(id)).to.equal(0n);
      expect(await policy.spentToday()).to.equal(0n);
      expect(await policy.entrySpentToday(HOST)).to.equal(0n);
    });

    it("refuses the pinned leaf claimed with payee 0 or another payee (merchant_not_allowed, 1)", async function () {
      const { policy, agent, operator, setPolicy, P, Q, payees, caps, merchants } = await loadFixture(payeesFixture);
      await setPolicy({ merchants });
      const { proof } = proofFor(ALLOWLIST, HOST, caps, payees);
      const claims = [
        { leaf: leafOf(HOST, usdc(4), ANY_PAYEE), payTo: Q },
        { leaf: leafOf(HOST, usdc(4), Q), payTo: Q },
        { leaf: leafOf(HOST, usdc(4), ANY_PAYEE), payTo: P },
        { leaf: leafOf(HOST, 0n, ANY_PAYEE), payTo: P },
      ];
      for (const { leaf, payTo } of claims) {
        const id = paymentId();
        await expect(policy.connect(operator).authorizePayment(id, HOST, leaf, proof, await transferOf(1n, payTo), NO_APPROVAL))
          .to.emit(policy, "PaymentBlocked")
          .withArgs(...blockedArgs(id, agent, HOST, 1n, 1));
        expect(await policy.paymentState(id)).to.equal(0n);
      }
    });

    it("proves only [entry, cap, payee] leaves: an [entry, cap] or [entry] leaf in a root written behind its back admits nothing", async function () {
      const { policy, agent, operator, P } = await loadFixture(payeesFixture);
      const slot = await rootSlot(agent, allowlistRoot(ALLOWLIST));
      // Roots of version 1 and 2 leaves (before payees and caps): no signed list can produce one any more.
      for (const [values, types] of [
        [ALLOWLIST.map((e) => [e, "0"]), ["string", "uint256"]],
        [ALLOWLIST.map((e) => [e]), ["string"]],
      ] as const) {
        const tree = StandardMerkleTree.of(
          values.map((v) => [...v]),
          [...types],
        );
        await ethers.provider.send("hardhat_setStorageAt", [agent, slot, tree.root]);
        const index = [...tree.entries()].find(([, v]) => v[0] === HOST)![0];
        const id = paymentId();
        await expect(
          policy.connect(operator).authorizePayment(id, HOST, leafOf(HOST), tree.getProof(index), await transferOf(1n, P), NO_APPROVAL),
        )
          .to.emit(policy, "PaymentBlocked")
          .withArgs(...blockedArgs(id, agent, HOST, 1n, 1));
      }
    });

    it("makes checkPayment agree: Allow for the payee, Block with reason 14 for another address", async function () {
      const { policy, setPolicy, P, Q, payees, caps, merchants } = await loadFixture(payeesFixture);
      await setPolicy({ merchants });
      const { leaf, proof } = proofFor(ALLOWLIST, HOST, caps, payees);
      expect(await policy.checkPayment(HOST, leaf, proof, P, 1n)).to.deep.equal([0n, 0n]);
      expect(await policy.checkPayment(HOST, leaf, proof, Q, 1n)).to.deep.equal([2n, 14n]);
      expect(await policy.checkPayment(HOST, leafOf(HOST, usdc(4)), proof, Q, 1n)).to.deep.equal([2n, 1n]);
    });
  });

  describe("approvals bind payTo", function () {
    it("lets an approval signed for payTo P authorise a payment to P only, not the same payment to Q", async function () {
      const { policy, agent, owner, pay, P, Q } = await loadFixture(payeesFixture);
      const amount = usdc(4); // above the 3 USDC threshold
      const fields = { approvalId: "appr-payto", agent, merchant: HOST, payTo: P, amount, timestamp: BigInt(await time.latest()) };
      const approval = await signApproval(owner, agent, fields);
      const toQ = paymentId();
      await expect(pay(amount, HOST, { id: toQ, approval, transfer: await transferOf(amount, Q) }))
        .to.emit(policy, "PaymentBlocked")
        .withArgs(...blockedArgs(toQ, agent, HOST, amount, 5));
      expect(await policy.approvalUsed("appr-payto")).to.equal(false);
      const toP = paymentId();
      await expect(pay(amount, HOST, { id: toP, approval, transfer: await transferOf(amount, P) }))
        .to.emit(policy, "ApprovalUsed")
        .withArgs(toP, agent, "appr-payto", amount, fields.timestamp, approval.signature)
        .and.to.emit(policy, "PaymentAuthorized");
    });
  });

  describe("authorisation epoch", function () {
    it("kills a payment authorised before a pause and resume; one authorised after settles; the old one can be released", async function () {
      const { policy, token, pay, release, setPaused, transfers, settle, walletAnswer } = await loadFixture(payeesFixture);
      const before = paymentId();
      await pay(usdc(1), HOST, { id: before });
      expect(await walletAnswer(before)).to.equal(MAGIC);
      const e0 = await policy.epoch();
      await setPaused(true);
      expect(await policy.epoch()).to.equal(e0 + 1n);
      await setPaused(false); // signed with the current epoch()
      expect(await policy.epoch()).to.equal(e0 + 1n);
      expect(await walletAnswer(before)).to.equal(INVALID);
      await expect(settle(before, transfers.get(before)!)).to.be.revertedWith("FiatTokenV2: invalid signature");
      const after = paymentId();
      await pay(usdc(2), HOST, { id: after });
      await expect(settle(after, transfers.get(after)!)).to.emit(token, "AuthorizationUsed");
      expect(await policy.spentToday()).to.equal(usdc(3));
      await expect(release(before)).to.emit(policy, "PaymentReleased").withArgs(before, anyValue, usdc(1), usdc(2));
      expect(await policy.paymentState(before)).to.equal(0n);
    });

    it("starts a new epoch (by one) on updatePolicy with the same values, setOperator and setOwner, killing earlier payments", async function () {
      const { policy, agent, owner, operator, other, pay, transfers, settle, walletAnswer } = await loadFixture(payeesFixture);
      const actions: (() => Promise<ContractTransactionResponse>)[] = [
        async () => {
          const ts = await nextTimestamp();
          return policy.connect(other).updatePolicy(DEFAULT_POLICY, ts, await signSetPolicy(owner, agent, agent, DEFAULT_POLICY, ts));
        },
        async () => {
          const ts = await nextTimestamp();
          return policy.connect(other).setOperator(operator.address, ts, await signSetOperator(owner, agent, agent, operator.address, ts));
        },
        async () => {
          const ts = await nextTimestamp();
          return policy.connect(other).setOwner(owner.address, ts, await signSetOwner(owner, agent, owner.address, ts));
        },
      ];
      for (const action of actions) {
        const id = paymentId();
        await pay(1n, HOST, { id });
        expect(await walletAnswer(id)).to.equal(MAGIC);
        const epoch = await policy.epoch();
        await (await action()).wait();
        expect(await policy.epoch()).to.equal(epoch + 1n);
        expect(await walletAnswer(id)).to.equal(INVALID);
        await expect(settle(id, transfers.get(id)!)).to.be.revertedWith("FiatTokenV2: invalid signature");
      }
      const fresh = paymentId();
      await pay(1n, HOST, { id: fresh });
      await settle(fresh, transfers.get(fresh)!);
    });

    it("reverts a resume signed with a stale epoch (before a later pause), even with a newer timestamp", async function () {
      const { policy, agent, owner, other, setPaused } = await loadFixture(payeesFixture);
      await setPaused(true);
      const held = await policy.epoch();
      const late = BigInt(await time.latest()) + 300n;
      const heldResume = await signSetPaused(owner, agent, agent, false, late, held);
      await setPaused(true);
      expect(await policy.epoch()).to.equal(held + 1n);
      await expect(policy.connect(other).setPaused(false, held, late, heldResume))
        .to.be.revertedWithCustomError(policy, "SpendPolicyStaleEpoch")
        .withArgs(held, held + 1n);
      expect(await policy.paused()).to.equal(true);
    });

    it("emits PaymentAuthorized with validAfter and the epoch (all 13 fields)", async function () {
      const { policy, agent, pay, setPolicy, P, payees, caps, merchants } = await loadFixture(payeesFixture);
      await setPolicy({ merchants });
      const now = BigInt(await time.latest());
      const transfer = { payTo: P, amount: usdc(2), validAfter: now - 30n, validBefore: now + 600n };
      const epoch = await policy.epoch();
      const id = paymentId();
      await expect(pay(usdc(2), HOST, { id, payees, caps, transfer }))
        .to.emit(policy, "PaymentAuthorized")
        .withArgs(id, agent, merchantHash(HOST), HOST, P, usdc(2), now - 30n, now + 600n, usdc(2), epoch, HOST, usdc(4), P);
    });
  });

  describe("self addresses", function () {
    it("reverts SpendPolicySelfAddress for setOwner, setOperator and withdraw to the wallet itself, changing nothing", async function () {
      const { policy, agent, owner, operator, other, token, tokenAddress } = await loadFixture(payeesFixture);
      const epoch = await policy.epoch();
      const ts = await nextTimestamp();
      await expect(policy.connect(other).setOwner(agent, ts, await signSetOwner(owner, agent, agent, ts))).to.be.revertedWithCustomError(
        policy,
        "SpendPolicySelfAddress",
      );
      await expect(
        policy.connect(other).setOperator(agent, ts, await signSetOperator(owner, agent, agent, agent, ts)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicySelfAddress");
      const w = { token: tokenAddress, to: agent, amount: usdc(1), timestamp: ts };
      await expect(
        policy.connect(other).withdraw(w.token, w.to, w.amount, w.timestamp, await signWithdraw(owner, agent, w)),
      ).to.be.revertedWithCustomError(policy, "SpendPolicySelfAddress");
      expect(await policy.owner()).to.equal(owner.address);
      expect(await policy.operator()).to.equal(operator.address);
      expect(await policy.epoch()).to.equal(epoch);
      expect(await policy.lastTimestamp(2)).to.equal(0n);
      expect(await policy.lastTimestamp(3)).to.equal(0n);
      expect(await token.balanceOf(agent)).to.equal(usdc(100));
    });
  });

  describe("owner-bound factory", function () {
    it("deploys an owner-bound agent at predictAgent(signer, owner), distinct from the open address, with deployment events", async function () {
      const { factory, operator, owner } = await loadFixture(payeesFixture);
      const signer = ethers.Wallet.createRandom().address;
      const bound = await factory.predictAgent(signer, owner.address);
      expect(bound).to.not.equal(await factory.predictAgent(signer, ethers.ZeroAddress));
      const ts = await nextTimestamp();
      const sig = await signSetPolicy(owner, bound, bound, DEFAULT_POLICY, ts);
      const at = await ethers.getContractAt("SpendPolicy", bound);
      await expect(factory.connect(operator).deployAgent(signer, owner.address, true, DEFAULT_POLICY, ts, sig))
        .to.emit(factory, "AgentDeployed")
        .withArgs(bound, owner.address, bound)
        .and.to.emit(at, "OwnerSet")
        .withArgs(bound, owner.address, 0n, "0x")
        .and.to.emit(at, "OperatorSet")
        .withArgs(bound, operator.address, 0n, "0x");
      expect(await factory.agentOf(signer, owner.address)).to.equal(bound);
      expect(await factory.agentOf(signer, ethers.ZeroAddress)).to.equal(ethers.ZeroAddress);
      expect(await at.owner()).to.equal(owner.address);
    });

    it("does not let the operator deploy the owner-bound address with another owner", async function () {
      const { factory, operator, owner, other } = await loadFixture(payeesFixture);
      const signer = ethers.Wallet.createRandom().address;
      const bound = await factory.predictAgent(signer, owner.address);
      const hijack = await deployAgentFor(factory, operator, signer, other.address, other, DEFAULT_POLICY, true);
      const landed = await hijack.getAddress();
      expect(landed).to.equal(await factory.predictAgent(signer, other.address));
      expect(landed).to.not.equal(bound);
      expect(await ethers.provider.getCode(bound)).to.equal("0x");
      expect(await factory.agentOf(signer, owner.address)).to.equal(ethers.ZeroAddress);
    });
  });

  describe("minSwapRate", function () {
    it("stores and returns minSwapRate, and reverts SpendPolicyInvalidPolicy above uint64", async function () {
      const { policy, agent, owner, setPolicy } = await loadFixture(payeesFixture);
      await setPolicy({ minSwapRate: usdc(2500) });
      expect((await policy.policy()).minSwapRate).to.equal(usdc(2500));
      const values = { ...DEFAULT_POLICY, minSwapRate: 2n ** 64n };
      const ts = await nextTimestamp();
      await expect(policy.updatePolicy(values, ts, await signSetPolicy(owner, agent, agent, values, ts))).to.be.revertedWithCustomError(
        policy,
        "SpendPolicyInvalidPolicy",
      );
      expect((await policy.policy()).minSwapRate).to.equal(usdc(2500));
    });
  });
});
