/**
 * The factory has one address on every network (the deterministic deployer, the configurer its only argument), and so
 * have its implementation (its first CREATE) and every agent. What configure is given (USDC, the swap contracts, and
 * the two modules the wallet runs by delegatecall: SpendPolicySchemes behind its fallback, SpendPolicyUpdates behind
 * initialize and updatePolicy) enters none of those addresses, and configure checks the implementation's code only. On
 * a network where nobody has configured the factory yet, its configurer (the deployer key, kept "offline, not needed
 * again except for new deployments") can configure it with modules of its own: every owner-bound agent address of
 * every other network then exists there too, with the owner's name on it, no signature of hers, and a fallback that
 * hands its money to anyone. (A second network is the same in-process chain after a reset.)
 */
import { expect } from "chai";
import hre from "hardhat";
import { reset } from "@nomicfoundation/hardhat-network-helpers";
import { DEFAULT_POLICY, nextTimestamp, signSetPolicy } from "../helpers/policyFixture";
import { NO_SWAPS, deployDeterministic, deployFactoryContract } from "../../src/chain/deploy";

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
    const initCode = ethers.concat([bytecode, ethers.AbiCoder.defaultAbiCoder().encode(["address"], [deployer.address])]);
    const b = await deployDeterministic(hre, deployer, initCode, SALT);
    expect(b.address, "the same factory address").to.equal(a.address);
    const factory = await ethers.getContractAt("SpendPolicyFactory", b.address);
    await (await usdcB.mint(agentOnA, 1_000_000_000n)).wait();

    // The configurer's own modules: the implementation's code is SpendPolicy's, so the check passes.
    const rogue = await (await ethers.deployContract("RogueModule")).getAddress();
    const { bytecode: creationCode } = await hre.artifacts.readArtifact("SpendPolicy");
    const configured = factory
      .connect(deployer)
      .configure(creationCode, thief.address, await usdcB.getAddress(), ...NO_SWAPS, rogue, rogue, { gasLimit: 10_000_000n })
      .then((tx) => tx.wait())
      .then(
        () => true,
        () => false,
      );
    if (await configured) {
      const predicted = await factory.predictAgent(signer, owner.address);
      if (predicted === agentOnA) {
        // Her address, her name as owner, no signature of hers (the rogue "updates" checks none).
        const timestamp = await nextTimestamp();
        const junk = await signSetPolicy(thief, predicted, predicted, DEFAULT_POLICY, timestamp);
        await factory
          .connect(thief)
          .deployAgent(signer, owner.address, true, DEFAULT_POLICY, timestamp, junk)
          .then((tx) => tx.wait())
          .catch(() => undefined);
        const drain = new ethers.Interface(["function drain(address token, address to)"]);
        await thief
          .sendTransaction({ to: predicted, data: drain.encodeFunctionData("drain", [await usdcB.getAddress(), thief.address]) })
          .then((tx) => tx.wait())
          .catch(() => undefined);
      }
    }
    expect(await usdcB.balanceOf(thief.address), "USDC the configurer took from her agent's address").to.equal(0n);
    expect(await usdcB.balanceOf(agentOnA)).to.equal(1_000_000_000n);
  });
});
