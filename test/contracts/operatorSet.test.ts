import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  ALLOWLIST,
  DEFAULT_POLICY,
  NO_APPROVAL,
  deployAgentFor,
  deployTestFactory,
  paymentId,
  proofFor,
  transferOf,
  usdc,
} from "../helpers/policyFixture";

const { ethers } = hre;

/** A factory whose default operator is an OperatorSet of two instance keys, and one agent deployed by the first. */
async function setFixture() {
  const [deployer, instanceA, instanceB, owner, stranger, merchant, instanceC] = await ethers.getSigners();
  const token = await ethers.deployContract("TestUSDC");
  const set = await ethers.deployContract("OperatorSet", [deployer.address, [instanceA.address, instanceB.address]]);
  const setAddress = await set.getAddress();
  const factory = await deployTestFactory(deployer, setAddress, await token.getAddress());
  const policy = await deployAgentFor(factory, instanceA, ethers.Wallet.createRandom().address, owner.address, owner);
  const pay = async (from: typeof instanceA, amount = usdc(1)) => {
    const { leaf, proof } = proofFor(ALLOWLIST, "api.example.com");
    const id = paymentId();
    const transfer = await transferOf(amount, merchant.address);
    return { id, transfer, tx: policy.connect(from).authorizePayment(id, "api.example.com", leaf, proof, transfer, NO_APPROVAL) };
  };
  return { deployer, instanceA, instanceB, instanceC, owner, stranger, token, set, setAddress, factory, policy, pay };
}

describe("OperatorSet: one operator key per service instance", function () {
  it("starts with its members, emits OperatorAdded for each, and only its owner adds or removes", async function () {
    const { set, instanceA, instanceB, instanceC, stranger, deployer } = await loadFixture(setFixture);
    expect(await set.isOperator(instanceA.address)).to.equal(true);
    expect(await set.isOperator(instanceB.address)).to.equal(true);
    expect(await set.isOperator(stranger.address)).to.equal(false);
    expect(await set.operatorCount()).to.equal(2n);
    await expect(set.connect(instanceA).addOperator(stranger.address))
      .to.be.revertedWithCustomError(set, "OwnableUnauthorizedAccount")
      .withArgs(instanceA.address);
    await expect(set.connect(instanceA).removeOperator(instanceB.address)).to.be.revertedWithCustomError(set, "OwnableUnauthorizedAccount");
    await expect(set.connect(deployer).addOperator(instanceC.address)).to.emit(set, "OperatorAdded").withArgs(instanceC.address);
    await expect(set.connect(deployer).addOperator(instanceC.address))
      .to.be.revertedWithCustomError(set, "OperatorSetAlreadyMember")
      .withArgs(instanceC.address);
    await expect(set.connect(deployer).addOperator(ethers.ZeroAddress)).to.be.revertedWithCustomError(set, "OperatorSetZeroAddress");
    await expect(set.connect(deployer).removeOperator(stranger.address))
      .to.be.revertedWithCustomError(set, "OperatorSetNotMember")
      .withArgs(stranger.address);
    expect(await set.operatorCount()).to.equal(3n);
  });

  it("makes the set the agent's operator when a member deploys, and refuses a deployer outside the set", async function () {
    const { factory, policy, setAddress, stranger, owner } = await loadFixture(setFixture);
    expect(await policy.operator()).to.equal(setAddress);
    const signer = ethers.Wallet.createRandom().address;
    await expect(deployAgentFor(factory, stranger, signer, owner.address, owner))
      .to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedDeployer")
      .withArgs(stranger.address);
  });

  it("lets every member authorise and release, and nobody else", async function () {
    const { policy, pay, instanceA, instanceB, stranger } = await loadFixture(setFixture);
    const a = await pay(instanceA);
    await expect(a.tx).to.emit(policy, "PaymentAuthorized");
    const b = await pay(instanceB);
    await expect(b.tx).to.emit(policy, "PaymentAuthorized");
    // One instance may release what another authorised (a survivor finishes a dead instance's payment).
    await expect(policy.connect(instanceB).releasePayment(a.id, a.transfer)).to.emit(policy, "PaymentReleased");
    const s = await pay(stranger);
    await expect(s.tx).to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator").withArgs(stranger.address);
    await expect(policy.connect(stranger).releasePayment(b.id, b.transfer))
      .to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator")
      .withArgs(stranger.address);
  });

  it("shuts a stolen instance key out of every agent at once when the deployer removes it, and admits its replacement", async function () {
    const { set, policy, pay, deployer, instanceA, instanceB, instanceC } = await loadFixture(setFixture);
    await expect(set.connect(deployer).removeOperator(instanceA.address)).to.emit(set, "OperatorRemoved").withArgs(instanceA.address);
    expect(await set.isOperator(instanceA.address)).to.equal(false);
    await expect((await pay(instanceA)).tx)
      .to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator")
      .withArgs(instanceA.address);
    // The other instances keep working; the new instance's key works once added.
    await expect((await pay(instanceB)).tx).to.emit(policy, "PaymentAuthorized");
    await expect((await pay(instanceC)).tx).to.be.revertedWithCustomError(policy, "SpendPolicyUnauthorizedOperator");
    await (await set.connect(deployer).addOperator(instanceC.address)).wait();
    await expect((await pay(instanceC)).tx).to.emit(policy, "PaymentAuthorized");
  });

  it("gives a member no more than one operator had: the daily budget binds them all together", async function () {
    const { policy, pay, instanceA, instanceB } = await loadFixture(setFixture);
    const per = DEFAULT_POLICY.approvalThreshold; // the most one payment may be without an owner approval
    let authorised = 0n;
    for (let i = 0; authorised + per <= DEFAULT_POLICY.dailyBudget; i++) {
      await expect((await pay(i % 2 ? instanceA : instanceB, per)).tx).to.emit(policy, "PaymentAuthorized");
      authorised += per;
    }
    await expect((await pay(instanceA, per)).tx).to.emit(policy, "PaymentBlocked");
    await expect((await pay(instanceB, per)).tx).to.emit(policy, "PaymentBlocked");
    expect(await policy.spentToday()).to.equal(authorised);
  });

  it("accepts only exactly 32 bytes holding true from an operator contract", async function () {
    const { token, deployer, owner, stranger, instanceA } = await loadFixture(setFixture);
    const odd = await ethers.deployContract("OddOperatorSet");
    // The factory's check is the policies' check (OperatorCheck): a malformed "yes" lets nobody through.
    const factory = await deployTestFactory(deployer, await odd.getAddress(), await token.getAddress());
    for (const mode of [0, 1, 2, 3, 4]) {
      await (await odd.setMode(mode)).wait();
      await expect(deployAgentFor(factory, stranger, ethers.Wallet.createRandom().address, owner.address, owner), `mode ${mode}`)
        .to.be.revertedWithCustomError(factory, "SpendPolicyUnauthorizedDeployer")
        .withArgs(stranger.address);
    }
    // An EOA in the operator slot answers a call with no data: a stranger does not pass either.
    const eoaFactory = await deployTestFactory(deployer, instanceA.address, await token.getAddress());
    await expect(
      deployAgentFor(eoaFactory, stranger, ethers.Wallet.createRandom().address, owner.address, owner),
    ).to.be.revertedWithCustomError(eoaFactory, "SpendPolicyUnauthorizedDeployer");
    const agent = await deployAgentFor(eoaFactory, instanceA, ethers.Wallet.createRandom().address, owner.address, owner);
    expect(await agent.operator()).to.equal(instanceA.address);
  });
});
