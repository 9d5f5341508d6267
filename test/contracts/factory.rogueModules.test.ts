/**
 * The factory has one address on every network (the deterministic deployer), and so have its modules, its
 * implementation and every agent. On a network where nobody has configured the factory yet, its configurer (the
 * deployer key, kept "offline, not needed again except for new deployments") configures it. Found in review: when
 * the two modules the wallet runs by delegatecall (SpendPolicySchemes behind its fallback, SpendPolicyUpdates behind
 * initialize and updatePolicy) were configure's arguments, it could give every owner-bound agent address modules of its
 * own, and drain what the owner sent there. Now the factory's address commits to the modules' code: the configurer
 * chooses only the network's token and swap contracts. (A second network is the same in-process chain after a reset.)
 */
import { expect } from "chai";
import hre from "hardhat";
import { reset } from "@nomicfoundation/hardhat-network-helpers";
import { DEFAULT_POLICY, creationCode, nextTimestamp, signSetPolicy } from "../helpers/policyFixture";
import { NO_SWAPS, deployDeterministic, deployFactoryContract, factoryArgs } from "../../src/chain/deploy";

const { ethers } = hre;
/** A salt of this file's own: nothing at the service's factory address (FACTORY_SALT) is touched. */
const SALT = ethers.id("review of issue 36: rogue modules");

describe("SpendPolicyFactory on a network nobody configured yet (review of issue 36)", function () {
  // A fresh chain for the files after this one (reset also drops every fixture snapshot).
  after(() => reset());

  it("an owner-bound agent's address admits no policy but hers there either: its funds stay hers", async function () {
    const [deployer, operator, owner, thief] = await ethers.getSigners();
    const signer = ethers.Wallet.createRandom().address;

    // Network A: the service's real deployment; the owner's agent (bound to her) has its address.
    const usdcA = await ethers.deployContract("TestUSDC");
    const a = await deployFactoryContract(hre, deployer, deployer.address, operator.address, await usdcA.getAddress(), 1, NO_SWAPS, SALT);
    const agentOnA = await (await ethers.getContractAt("SpendPolicyFactory", a.address)).predictAgent(signer, owner.address);

    // Network B: a fresh chain. The owner sends USDC to her agent's address there ("one address on every network").
    await reset();
    const usdcB = await ethers.deployContract("TestUSDC");
    const { bytecode } = await hre.artifacts.readArtifact("SpendPolicyFactory");
    const args = await factoryArgs(hre, deployer.address);
    const initCode = ethers.concat([bytecode, ethers.AbiCoder.defaultAbiCoder().encode(["address", "bytes32", "bytes32"], args)]);
    const b = await deployDeterministic(hre, deployer, initCode, SALT);
    expect(b.address, "the same factory address").to.equal(a.address);
    const factory = await ethers.getContractAt("SpendPolicyFactory", b.address);
    await (await usdcB.mint(agentOnA, 1_000_000_000n)).wait();

    // The configurer's own modules are refused: the factory's address commits to the modules' code.
    const rogue = await creationCode("RogueModule");
    const [schemesCode, updatesCode, implementationCode] = await Promise.all(
      ["SpendPolicySchemes", "SpendPolicyUpdates", "SpendPolicy"].map(creationCode),
    );
    const usdc = await usdcB.getAddress();
    for (const [schemes, updates] of [
      [rogue, rogue],
      [schemesCode, rogue],
      [rogue, updatesCode],
    ]) {
      await expect(factory.connect(deployer).createModules(schemes, updates, usdc)).to.be.revertedWithCustomError(
        factory,
        "SpendPolicyFactoryWrongImplementation",
      );
    }
    // With the real modules and an operator of its own, the configurer still needs her signature to deploy her agent.
    await (await factory.connect(deployer).createModules(schemesCode, updatesCode, usdc)).wait();
    await (await factory.connect(deployer).configure(implementationCode, thief.address, ...NO_SWAPS)).wait();
    const predicted = await factory.predictAgent(signer, owner.address);
    expect(predicted, "her agent's address on this network too").to.equal(agentOnA);
    const timestamp = await nextTimestamp();
    const junk = await signSetPolicy(thief, predicted, predicted, DEFAULT_POLICY, timestamp);
    await expect(factory.connect(thief).deployAgent(signer, owner.address, true, DEFAULT_POLICY, timestamp, junk)).to.be.reverted;
    const drain = new ethers.Interface(["function drain(address token, address to)"]);
    await thief
      .sendTransaction({ to: predicted, data: drain.encodeFunctionData("drain", [usdc, thief.address]) })
      .then((tx) => tx.wait())
      .catch(() => undefined);
    expect(await usdcB.balanceOf(thief.address), "USDC the configurer took from her agent's address").to.equal(0n);
    expect(await usdcB.balanceOf(agentOnA)).to.equal(1_000_000_000n);
  });
});
