import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { DEFAULT_POLICY, nextTimestamp, signSetPolicy } from "../helpers/policyFixture";

const { ethers } = hre;

async function factoryFixture() {
  const [deployer, operator, agentWallet, owner, other, newOperator] = await ethers.getSigners();
  const factory = await ethers.deployContract("SpendPolicyFactory", [deployer.address, operator.address]);
  const agent = agentWallet.address;
  const policyAt = (address: string) => ethers.getContractAt("SpendPolicy", address);
  /** The owner's first SetPolicy for the agent's predicted address. */
  async function firstPolicySignature(forAgent = agent, signer = owner) {
    const predicted = await factory.predictPolicyAddress(forAgent);
    const timestamp = await nextTimestamp();
    const signature = await signSetPolicy(signer, predicted, forAgent, DEFAULT_POLICY, timestamp);
    return { predicted, timestamp, signature };
  }
  return { factory, deployer, operator, agent, owner, other, newOperator, policyAt, firstPolicySignature };
}

describe("SpendPolicyFactory", function () {
  it("deploys the policy at the CREATE2 address predicted before deployment", async function () {
    const { factory, operator, agent, owner, policyAt, firstPolicySignature } = await loadFixture(factoryFixture);
    const { predicted, timestamp, signature } = await firstPolicySignature();
    expect(await factory.policyOf(agent)).to.equal(ethers.ZeroAddress);
    expect(await ethers.provider.getCode(predicted)).to.equal("0x");

    const deployed = await factory.connect(operator).deployPolicy.staticCall(agent, owner.address, DEFAULT_POLICY, timestamp, signature);
    expect(deployed).to.equal(predicted);
    const policy = await policyAt(predicted);
    await expect(factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, timestamp, signature))
      .to.emit(factory, "PolicyDeployed")
      .withArgs(agent, owner.address, predicted)
      .and.to.emit(policy, "PolicyUpdated")
      .withArgs(
        agent,
        DEFAULT_POLICY.perTxLimit,
        DEFAULT_POLICY.dailyBudget,
        DEFAULT_POLICY.allowlistRoot,
        DEFAULT_POLICY.approvalThreshold,
        timestamp,
      )
      .and.to.emit(policy, "OperatorSet")
      .withArgs(agent, operator.address);
    expect(await factory.policyOf(agent)).to.equal(predicted);
    expect(await policy.agent()).to.equal(agent);
    expect(await policy.owner()).to.equal(owner.address);
    expect(await policy.operator()).to.equal(operator.address);
    expect(await policy.lastTimestamp(0)).to.equal(timestamp);
  });

  it("predicts from the factory address, the agent and a constant init code only", async function () {
    const { factory, agent } = await loadFixture(factoryFixture);
    const artifact = await hre.artifacts.readArtifact("SpendPolicy");
    const initCodeHash = ethers.keccak256(artifact.bytecode);
    expect(await factory.policyInitCodeHash()).to.equal(initCodeHash);
    const salt = ethers.zeroPadValue(agent, 32);
    expect(await factory.predictPolicyAddress(agent)).to.equal(
      ethers.getCreate2Address(await factory.getAddress(), salt, initCodeHash),
    );
  });

  it("gives different agents different policies", async function () {
    const { factory, operator, agent, owner, other, firstPolicySignature } = await loadFixture(factoryFixture);
    const a = await firstPolicySignature(agent);
    await factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, a.timestamp, a.signature);
    const b = await firstPolicySignature(other.address);
    await factory.connect(operator).deployPolicy(other.address, owner.address, DEFAULT_POLICY, b.timestamp, b.signature);
    expect(a.predicted).to.not.equal(b.predicted);
    expect(await factory.policyOf(other.address)).to.equal(b.predicted);
  });

  it("reverts SpendPolicyUnauthorizedDeployer when anyone but the default operator deploys", async function () {
    const { factory, agent, owner, other, firstPolicySignature } = await loadFixture(factoryFixture);
    const { timestamp, signature } = await firstPolicySignature();
    for (const caller of [other, owner]) {
      await expect(factory.connect(caller).deployPolicy(agent, owner.address, DEFAULT_POLICY, timestamp, signature))
        .to.be.revertedWithCustomError(factory, "SpendPolicyUnauthorizedDeployer")
        .withArgs(caller.address);
    }
  });

  it("reverts SpendPolicyAlreadyDeployed when the agent's policy exists", async function () {
    const { factory, operator, agent, owner, firstPolicySignature } = await loadFixture(factoryFixture);
    const first = await firstPolicySignature();
    await factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, first.timestamp, first.signature);
    const again = await firstPolicySignature();
    await expect(factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, again.timestamp, again.signature))
      .to.be.revertedWithCustomError(factory, "SpendPolicyAlreadyDeployed")
      .withArgs(agent, first.predicted);
  });

  it("reverts SpendPolicyZeroAddress for a zero agent or owner", async function () {
    const { factory, operator, agent, owner, firstPolicySignature } = await loadFixture(factoryFixture);
    const { timestamp, signature } = await firstPolicySignature();
    const zero = ethers.ZeroAddress;
    await expect(
      factory.connect(operator).deployPolicy(zero, owner.address, DEFAULT_POLICY, timestamp, signature),
    ).to.be.revertedWithCustomError(factory, "SpendPolicyZeroAddress");
    await expect(
      factory.connect(operator).deployPolicy(agent, zero, DEFAULT_POLICY, timestamp, signature),
    ).to.be.revertedWithCustomError(factory, "SpendPolicyZeroAddress");
  });

  it("deploys nothing when the first policy is not signed by the owner", async function () {
    const { factory, operator, agent, owner, other, policyAt, firstPolicySignature } = await loadFixture(factoryFixture);
    const { predicted, timestamp, signature } = await firstPolicySignature(agent, other);
    const policy = await policyAt(predicted);
    await expect(
      factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, timestamp, signature),
    ).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");
    expect(await factory.policyOf(agent)).to.equal(ethers.ZeroAddress);
  });

  it("deploys nothing when the first policy is signed for another address or a stale time", async function () {
    const { factory, operator, agent, owner, policyAt } = await loadFixture(factoryFixture);
    const predicted = await factory.predictPolicyAddress(agent);
    const policy = await policyAt(predicted);
    const ts = await nextTimestamp();
    const wrongDomain = await signSetPolicy(owner, await factory.getAddress(), agent, DEFAULT_POLICY, ts);
    await expect(
      factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, ts, wrongDomain),
    ).to.be.revertedWithCustomError(policy, "SpendPolicyInvalidSignature");

    const old = await signSetPolicy(owner, predicted, agent, DEFAULT_POLICY, ts);
    await time.setNextBlockTimestamp(ts + 901n);
    await expect(factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, ts, old))
      .to.be.revertedWithCustomError(policy, "SpendPolicyTimestampOutOfWindow")
      .withArgs(ts, ts + 901n);
    expect(await factory.policyOf(agent)).to.equal(ethers.ZeroAddress);
  });

  it("lets only the factory owner change the default operator, which then deploys and operates new policies", async function () {
    const { factory, deployer, agent, owner, other, newOperator, operator, policyAt, firstPolicySignature } =
      await loadFixture(factoryFixture);
    await expect(factory.connect(other).setDefaultOperator(newOperator.address))
      .to.be.revertedWithCustomError(factory, "OwnableUnauthorizedAccount")
      .withArgs(other.address);
    await expect(factory.connect(deployer).setDefaultOperator(ethers.ZeroAddress)).to.be.revertedWithCustomError(
      factory,
      "SpendPolicyZeroAddress",
    );
    await expect(factory.connect(deployer).setDefaultOperator(newOperator.address))
      .to.emit(factory, "DefaultOperatorSet")
      .withArgs(newOperator.address);
    expect(await factory.defaultOperator()).to.equal(newOperator.address);

    const { predicted, timestamp, signature } = await firstPolicySignature();
    await expect(factory.connect(operator).deployPolicy(agent, owner.address, DEFAULT_POLICY, timestamp, signature))
      .to.be.revertedWithCustomError(factory, "SpendPolicyUnauthorizedDeployer")
      .withArgs(operator.address);
    await factory.connect(newOperator).deployPolicy(agent, owner.address, DEFAULT_POLICY, timestamp, signature);
    expect(await (await policyAt(predicted)).operator()).to.equal(newOperator.address);
  });

  it("starts with its constructor's owner and default operator, and no deployment parameters outside deployPolicy", async function () {
    const { factory, deployer, operator } = await loadFixture(factoryFixture);
    expect(await factory.owner()).to.equal(deployer.address);
    expect(await factory.defaultOperator()).to.equal(operator.address);
    expect(await factory.parameters()).to.deep.equal([ethers.ZeroAddress, ethers.ZeroAddress, ethers.ZeroAddress]);
  });

  it("refuses a zero default operator at construction", async function () {
    const { deployer, factory } = await loadFixture(factoryFixture);
    await expect(
      ethers.deployContract("SpendPolicyFactory", [deployer.address, ethers.ZeroAddress]),
    ).to.be.revertedWithCustomError(factory, "SpendPolicyZeroAddress");
  });
});
