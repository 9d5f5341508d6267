import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  DEFAULT_POLICY,
  creationCode,
  deployBareFactory,
  deployTestFactory,
  nextTimestamp,
  policyTuple,
  signSetPolicy,
  usdc,
} from "../helpers/policyFixture";
import { FACTORY_SALT, NO_SWAPS, deployFactoryContract, factoryArgs } from "../../src/chain/deploy";
import { DETERMINISTIC_DEPLOYER } from "../../src/chain/addresses";
import { allowlistRoot } from "../../src/policy/allowlist";

const { ethers } = hre;

/** The root the contract derives from DEFAULT_POLICY's signed entries. */
const DEFAULT_ROOT = allowlistRoot(DEFAULT_POLICY.merchants.map((m) => m.entry));

async function factoryFixture() {
  const [deployer, operator, owner, other, newOperator] = await ethers.getSigners();
  const token = await ethers.deployContract("TestUSDC");
  const factory = await deployTestFactory(deployer, operator.address, await token.getAddress());
  const signer = ethers.Wallet.createRandom().address;
  const policyAt = (address: string) => ethers.getContractAt("SpendPolicy", address);
  /** The owner's first SetPolicy for the agent's predicted address. */
  async function firstPolicySignature(forSigner = signer, by = owner) {
    const predicted = await factory.predictAgent(forSigner, ethers.ZeroAddress);
    const timestamp = await nextTimestamp();
    const signature = await signSetPolicy(by, predicted, predicted, DEFAULT_POLICY, timestamp);
    return { predicted, timestamp, signature };
  }
  return { token, factory, deployer, operator, signer, owner, other, newOperator, policyAt, firstPolicySignature };
}

describe("SpendPolicyFactory", function () {
  it("deploys the agent (wallet and policy) at the CREATE2 address predicted before deployment", async function () {
    const { factory, operator, signer, owner, policyAt, firstPolicySignature } = await loadFixture(factoryFixture);
    const { predicted, timestamp, signature } = await firstPolicySignature();
    expect(await factory.agentOf(signer, ethers.ZeroAddress)).to.equal(ethers.ZeroAddress);
    expect(await ethers.provider.getCode(predicted)).to.equal("0x");

    const deployed = await factory
      .connect(operator)
      .deployAgent.staticCall(signer, owner.address, false, DEFAULT_POLICY, timestamp, signature);
    expect(deployed).to.equal(predicted);
    const policy = await policyAt(predicted);
    const tuple = policyTuple(DEFAULT_POLICY);
    await expect(factory.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, timestamp, signature))
      .to.emit(factory, "AgentDeployed")
      .withArgs(predicted, owner.address, predicted)
      .and.to.emit(policy, "PolicyUpdated")
      .withArgs(predicted, 1n, tuple, DEFAULT_ROOT, timestamp, signature)
      .and.to.emit(policy, "OperatorSet")
      .withArgs(predicted, operator.address, 0n, "0x")
      .and.to.emit(policy, "OwnerSet")
      .withArgs(predicted, owner.address, 0n, "0x");
    expect(await factory.agentOf(signer, ethers.ZeroAddress)).to.equal(predicted);
    expect(await policy.agent()).to.equal(predicted);
    expect(await policy.signingKey()).to.equal(signer);
    expect(await policy.owner()).to.equal(owner.address);
    expect(await policy.operator()).to.equal(operator.address);
    expect(await policy.policyVersion()).to.equal(1n);
    expect(await policy.lastTimestamp(0)).to.equal(timestamp);
  });

  it("predicts an ERC-1167 clone of the one implementation, with the signing key as immutable argument", async function () {
    const { factory, signer } = await loadFixture(factoryFixture);
    const implementation = await factory.implementation();
    expect(await ethers.provider.getCode(implementation)).to.not.equal("0x");
    // OpenZeppelin Clones with immutable args: 0x61 <len> 3d81600a3d39f3 363d3d373d3d3d363d73 <impl> 5af43d82803e903d91602b57fd5bf3 <args>
    const runtime = `363d3d373d3d3d363d73${implementation.slice(2).toLowerCase()}5af43d82803e903d91602b57fd5bf3${signer.slice(2).toLowerCase()}`;
    const initCode = `0x61${(runtime.length / 2).toString(16).padStart(4, "0")}3d81600a3d39f3${runtime}`;
    const salt = ethers.zeroPadValue(signer, 32);
    expect(await factory.predictAgent(signer, ethers.ZeroAddress)).to.equal(
      ethers.getCreate2Address(await factory.getAddress(), salt, ethers.keccak256(initCode)),
    );
  });

  it("lets funds arrive before deployment: they are the wallet's once it is deployed", async function () {
    const { token, factory, operator, signer, owner, policyAt, firstPolicySignature } = await loadFixture(factoryFixture);
    const { predicted, timestamp, signature } = await firstPolicySignature();
    await token.mint(predicted, usdc(7));
    await owner.sendTransaction({ to: predicted, value: 1000n });
    await factory.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, timestamp, signature);
    expect(await token.balanceOf(predicted)).to.equal(usdc(7));
    expect(await ethers.provider.getBalance(predicted)).to.equal(1000n);
    expect(await (await policyAt(predicted)).owner()).to.equal(owner.address);
  });

  it("lets only the default operator deploy (nobody can squat an agent's address with an owner of their own)", async function () {
    const { factory, other, owner, signer, firstPolicySignature } = await loadFixture(factoryFixture);
    const { timestamp, signature } = await firstPolicySignature();
    await expect(factory.connect(other).deployAgent(signer, owner.address, false, DEFAULT_POLICY, timestamp, signature))
      .to.be.revertedWithCustomError(factory, "SpendPolicyUnauthorizedDeployer")
      .withArgs(other.address);
    await expect(factory.connect(owner).deployAgent(signer, owner.address, false, DEFAULT_POLICY, timestamp, signature))
      .to.be.revertedWithCustomError(factory, "SpendPolicyUnauthorizedDeployer")
      .withArgs(owner.address);
  });

  it("reverts SpendPolicyAlreadyDeployed for a second deployment of the same signing key", async function () {
    const { factory, operator, owner, signer, firstPolicySignature } = await loadFixture(factoryFixture);
    const first = await firstPolicySignature();
    await factory.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, first.timestamp, first.signature);
    const again = await firstPolicySignature();
    await expect(factory.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, again.timestamp, again.signature))
      .to.be.revertedWithCustomError(factory, "SpendPolicyAlreadyDeployed")
      .withArgs(first.predicted);
  });

  it("refuses a first policy not signed by the named owner, and zero addresses", async function () {
    const { factory, operator, owner, other, signer, policyAt, firstPolicySignature } = await loadFixture(factoryFixture);
    const forged = await firstPolicySignature(signer, other);
    const implementation = await policyAt(await factory.implementation());
    await expect(
      factory.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, forged.timestamp, forged.signature),
    ).to.be.revertedWithCustomError(implementation, "SpendPolicyInvalidSignature");
    const ok = await firstPolicySignature();
    await expect(
      factory.connect(operator).deployAgent(ethers.ZeroAddress, owner.address, false, DEFAULT_POLICY, ok.timestamp, ok.signature),
    ).to.be.revertedWithCustomError(factory, "SpendPolicyZeroAddress");
    await expect(
      factory.connect(operator).deployAgent(signer, ethers.ZeroAddress, false, DEFAULT_POLICY, ok.timestamp, ok.signature),
    ).to.be.revertedWithCustomError(factory, "SpendPolicyZeroAddress");
  });

  it("never lets anyone initialise the implementation or a deployed agent again", async function () {
    const { factory, operator, owner, other, signer, policyAt, firstPolicySignature } = await loadFixture(factoryFixture);
    const implementation = await policyAt(await factory.implementation());
    await expect(implementation.connect(other).initialize(other.address, other.address, DEFAULT_POLICY, 1n, "0x"))
      .to.be.revertedWithCustomError(implementation, "SpendPolicyUnauthorizedDeployer")
      .withArgs(other.address);
    const { predicted, timestamp, signature } = await firstPolicySignature();
    await factory.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, timestamp, signature);
    const agent = await policyAt(predicted);
    await expect(agent.connect(operator).initialize(other.address, other.address, DEFAULT_POLICY, 1n, "0x"))
      .to.be.revertedWithCustomError(agent, "SpendPolicyUnauthorizedDeployer")
      .withArgs(operator.address);
  });

  it("lets only its owner change the default operator, which deploys and operates new agents only", async function () {
    const { factory, deployer, operator, other, newOperator, owner, signer, policyAt, firstPolicySignature } =
      await loadFixture(factoryFixture);
    const first = await firstPolicySignature();
    await factory.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, first.timestamp, first.signature);
    await expect(factory.connect(other).setDefaultOperator(newOperator.address)).to.be.revertedWithCustomError(
      factory,
      "OwnableUnauthorizedAccount",
    );
    await expect(factory.connect(deployer).setDefaultOperator(ethers.ZeroAddress)).to.be.revertedWithCustomError(
      factory,
      "SpendPolicyZeroAddress",
    );
    await expect(factory.connect(deployer).setDefaultOperator(newOperator.address))
      .to.emit(factory, "DefaultOperatorSet")
      .withArgs(newOperator.address);
    expect(await factory.defaultOperator()).to.equal(newOperator.address);
    expect(await (await policyAt(first.predicted)).operator()).to.equal(operator.address); // existing agents keep theirs
    const second = ethers.Wallet.createRandom().address;
    const s2 = await firstPolicySignature(second);
    await expect(
      factory.connect(operator).deployAgent(second, owner.address, false, DEFAULT_POLICY, s2.timestamp, s2.signature),
    ).to.be.revertedWithCustomError(factory, "SpendPolicyUnauthorizedDeployer");
    await factory.connect(newOperator).deployAgent(second, owner.address, false, DEFAULT_POLICY, s2.timestamp, s2.signature);
    expect(await (await policyAt(s2.predicted)).operator()).to.equal(newOperator.address);
  });

  it("is configured once, by its owner, with SpendPolicy's own code and the modules its address commits to: until then nothing can be deployed", async function () {
    const { token, deployer, operator, other, owner } = await loadFixture(factoryFixture);
    const usdc = await token.getAddress();
    const bare = await deployBareFactory(deployer);
    const [bytecode, schemesCode, updatesCode, other1271] = await Promise.all(
      ["SpendPolicy", "SpendPolicySchemes", "SpendPolicyUpdates", "ERC1271Wallet"].map(creationCode),
    );
    const args = [operator.address, ...NO_SWAPS] as const;
    const signer = ethers.Wallet.createRandom().address;
    const predicted = await bare.predictAgent(signer, ethers.ZeroAddress);
    const timestamp = await nextTimestamp();
    const signature = await signSetPolicy(owner, predicted, predicted, DEFAULT_POLICY, timestamp);
    await expect(bare.connect(operator).deployAgent(signer, owner.address, false, DEFAULT_POLICY, timestamp, signature))
      .to.be.revertedWithCustomError(bare, "SpendPolicyUnauthorizedDeployer")
      .withArgs(operator.address);
    await expect(bare.configure(bytecode, ...args)).to.be.revertedWithCustomError(bare, "SpendPolicyFactoryNoModules");
    // The modules: their owner's call alone, and no code but the compiled modules' (the factory's address commits to them).
    await expect(bare.connect(other).createModules(schemesCode, updatesCode, usdc)).to.be.revertedWithCustomError(
      bare,
      "OwnableUnauthorizedAccount",
    );
    await expect(bare.createModules(other1271, updatesCode, usdc)).to.be.revertedWithCustomError(
      bare,
      "SpendPolicyFactoryWrongImplementation",
    );
    await expect(bare.createModules(schemesCode, other1271, usdc)).to.be.revertedWithCustomError(
      bare,
      "SpendPolicyFactoryWrongImplementation",
    );
    await expect(bare.createModules(schemesCode, updatesCode, ethers.ZeroAddress)).to.be.revertedWithCustomError(
      bare,
      "SpendPolicyZeroAddress",
    );
    await (await bare.createModules(schemesCode, updatesCode, usdc)).wait();
    const from = await bare.getAddress();
    const [schemes, updates] = [1, 2].map((nonce) => ethers.getCreateAddress({ from, nonce }));
    expect([...(await bare.modules())]).to.deep.equal([schemes, updates, usdc]);
    await expect(bare.createModules(schemesCode, updatesCode, usdc))
      .to.be.revertedWithCustomError(bare, "SpendPolicyFactoryConfigured")
      .withArgs(schemes);
    await expect(bare.connect(other).configure(bytecode, ...args)).to.be.revertedWithCustomError(bare, "OwnableUnauthorizedAccount");
    // Any other code is refused, so the implementation is what the factory's own source says, on every network.
    await expect(bare.configure(other1271, ...args)).to.be.revertedWithCustomError(bare, "SpendPolicyFactoryWrongImplementation");
    const expected = ethers.getCreateAddress({ from, nonce: 3 });
    await expect(bare.configure(bytecode, ...args))
      .to.emit(bare, "Configured")
      .withArgs(expected, usdc, schemes, updates);
    expect(await bare.implementation()).to.equal(expected);
    await expect(bare.configure(bytecode, ...args))
      .to.be.revertedWithCustomError(bare, "SpendPolicyFactoryConfigured")
      .withArgs(expected);
  });

  it("deploys through the deterministic proxy at an address set by the deployer alone: the same factory, implementation and agents on every network", async function () {
    const { token, deployer, operator, owner } = await loadFixture(factoryFixture);
    const usdcAddress = await token.getAddress();
    const deployed = await deployFactoryContract(hre, deployer, owner.address, operator.address, usdcAddress, 1, NO_SWAPS, FACTORY_SALT);
    const { bytecode } = await hre.artifacts.readArtifact("SpendPolicyFactory");
    const args = await factoryArgs(hre, deployer.address);
    const initCode = ethers.concat([bytecode, ethers.AbiCoder.defaultAbiCoder().encode(["address", "bytes32", "bytes32"], args)]);
    // Nothing of this network (its USDC, its operator) enters the factory's address, the modules' or the implementation's;
    // the modules' code does.
    expect(deployed.address).to.equal(ethers.getCreate2Address(DETERMINISTIC_DEPLOYER.address, FACTORY_SALT, ethers.keccak256(initCode)));
    const [schemes, updates, implementation] = [1, 2, 3].map((nonce) => ethers.getCreateAddress({ from: deployed.address, nonce }));
    expect([deployed.schemes, deployed.updates, deployed.implementation]).to.deep.equal([schemes, updates, implementation]);
    const factory = await ethers.getContractAt("SpendPolicyFactory", deployed.address);
    expect(await factory.owner()).to.equal(owner.address);
    expect(await factory.defaultOperator()).to.equal(operator.address);
  });

  it("isValidSignatureNow agrees with the contracts for EOA and ERC-1271 signers", async function () {
    const { factory, other } = await loadFixture(factoryFixture);
    const hash = ethers.id("anything");
    const wallet = ethers.Wallet.createRandom();
    const good = wallet.signingKey.sign(hash).serialized;
    expect(await factory.isValidSignatureNow(wallet.address, hash, good)).to.equal(true);
    expect(await factory.isValidSignatureNow(other.address, hash, good)).to.equal(false);
    const erc1271 = await ethers.deployContract("ERC1271Wallet", [wallet.address]);
    expect(await factory.isValidSignatureNow(await erc1271.getAddress(), hash, good)).to.equal(true);
    expect(await factory.isValidSignatureNow(await erc1271.getAddress(), ethers.id("other"), good)).to.equal(false);
  });
});
