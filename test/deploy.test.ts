import { expect } from "chai";
import hre from "hardhat";
import { Contract, Wallet, getAddress, keccak256, toUtf8Bytes } from "ethers";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deployFactory, factoryArgs, swapConfigOf } from "../src/chain/deploy";
import { DeploymentChainMismatchError, readDeploymentRecord, verifyCommands, type DeploymentRecord } from "../src/chain/deploymentRecord";
import { DETERMINISTIC_DEPLOYER, USDC_ADDRESSES } from "../src/chain/addresses";

const { ethers } = hre;

/** A fresh CREATE2 salt: each deployment here is another factory (the same salt and deployer give the same one). */
const randomSalt = () => ethers.hexlify(ethers.randomBytes(32));

describe("deployFactory (scripts/deploy.ts) on the in-process hardhat network", function () {
  let dir: string;

  before(async function () {
    // The factory reads USDC's EIP-712 domain when it deploys the implementation: TestUSDC at the Base address.
    const testUsdc = await hre.artifacts.readArtifact("TestUSDC");
    await hre.network.provider.request({ method: "hardhat_setCode", params: [USDC_ADDRESSES[8453], testUsdc.deployedBytecode] });
  });
  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), "spendgate-deployments-"));
  });
  afterEach(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it("deploys the factory and records network, chain id, addresses, tx, block, USDC and ABI hash", async function () {
    const [deployer] = await ethers.getSigners();
    const operator = Wallet.createRandom().address;
    const owner = Wallet.createRandom().address;
    const record = await deployFactory(hre, { operator, owner, deploymentsDir: dir, salt: randomSalt() });

    const onDisk = JSON.parse(readFileSync(join(dir, "hardhat.json"), "utf8")) as DeploymentRecord;
    expect(onDisk).to.deep.equal(record);
    expect(record).to.include({ network: "hardhat", chainId: 8453, usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" });
    // The factory's defaultOperator is the OperatorSet, whose first member is the operator key.
    const setAddress = record.operatorSet.address;
    expect(record.factory).to.include({ deployer: deployer.address, owner, defaultOperator: setAddress });
    expect(record.operatorSet).to.deep.include({ owner, members: [operator], constructorArgs: [owner, [operator]] });
    const set = new Contract(
      setAddress,
      ["function isOperator(address) view returns (bool)", "function owner() view returns (address)"],
      ethers.provider,
    );
    expect(await set.isOperator(operator)).to.equal(true);
    expect(await set.isOperator(deployer.address)).to.equal(false);
    expect(await set.owner()).to.equal(owner);
    const usdc = USDC_ADDRESSES[8453];
    // A dry run on the hardhat network usually has no Uniswap: the implementation is then built without swaps.
    const none = swapConfigOf(record.uniswap);
    expect(none).to.deep.equal(
      record.uniswap
        ? [record.uniswap.swapRouter02, record.uniswap.weth, record.uniswap.factory]
        : [ethers.ZeroAddress, ethers.ZeroAddress, ethers.ZeroAddress],
    );
    // The factory's arguments are its deployer (who configures it, then hands it to the owner) and its modules' code
    // hashes: with the deterministic deployment proxy, the same deployer gets the same factory address on every network.
    expect(record.factory.constructorArgs).to.deep.equal(await factoryArgs(hre, deployer.address));
    const [, , schemes, updates] = record.implementation.constructorArgs;
    expect([schemes, updates]).to.deep.equal([1, 2].map((nonce) => ethers.getCreateAddress({ from: record.factory.address, nonce })));
    expect(record.implementation.constructorArgs).to.deep.equal([usdc, none, schemes, updates]);
    expect(readFileSync(join(dir, "hardhat.implementation-args.js"), "utf8")).to.equal(
      `module.exports = ${JSON.stringify([usdc, none, schemes, updates])};\n`,
    );
    expect(new Date(record.deployedAt).getTime()).to.be.closeTo(Date.now(), 60_000);

    const receipt = await ethers.provider.getTransactionReceipt(record.factory.txHash!);
    expect(receipt?.to).to.equal(getAddress(DETERMINISTIC_DEPLOYER.address));
    expect(receipt?.blockNumber).to.equal(record.factory.block);
    expect(await ethers.provider.getCode(record.factory.address)).to.not.equal("0x");
    const factory = new Contract(
      record.factory.address,
      [
        "function defaultOperator() view returns (address)",
        "function owner() view returns (address)",
        "function implementation() view returns (address)",
      ],
      ethers.provider,
    );
    expect(await factory.defaultOperator()).to.equal(setAddress);
    expect(await factory.owner()).to.equal(owner);
    expect(await factory.implementation()).to.equal(record.implementation.address);
    const implementation = new Contract(
      record.implementation.address,
      ["function usdc() view returns (address)", "function factory() view returns (address)"],
      ethers.provider,
    );
    expect(await implementation.usdc()).to.equal(usdc);
    expect(await implementation.factory()).to.equal(record.factory.address);

    const abis = {
      SpendPolicyFactory: (await hre.artifacts.readArtifact("SpendPolicyFactory")).abi,
      SpendPolicy: (await hre.artifacts.readArtifact("SpendPolicy")).abi,
    };
    expect(record.abiHash).to.equal(keccak256(toUtf8Bytes(JSON.stringify(abis))));
    expect(verifyCommands(record)).to.deep.equal([
      `npx hardhat verify --network hardhat --contract contracts/OperatorSet.sol:OperatorSet ${setAddress} ${owner} '["${operator}"]'`,
      `npx hardhat verify --network hardhat --contract contracts/SpendPolicyFactory.sol:SpendPolicyFactory ${record.factory.address} ${record.factory.constructorArgs.join(" ")}`,
      `npx hardhat verify --network hardhat --contract contracts/SpendPolicySchemes.sol:SpendPolicySchemes ${schemes} ${usdc}`,
      `npx hardhat verify --network hardhat --contract contracts/SpendPolicyUpdates.sol:SpendPolicyUpdates ${updates}`,
      `npx hardhat verify --network hardhat --contract contracts/SpendPolicy.sol:SpendPolicy --constructor-args deployments/hardhat.implementation-args.js ${record.implementation.address}`,
    ]);
  });

  it("defaults owner and operator to the deployer on the hardhat network and overwrites a record of the same chain", async function () {
    const [deployer] = await ethers.getSigners();
    const first = await deployFactory(hre, { deploymentsDir: dir, salt: randomSalt() });
    expect(first.factory).to.include({ owner: deployer.address, defaultOperator: first.operatorSet.address });
    expect(first.operatorSet.members).to.deep.equal([deployer.address]);
    // The same deployer and salt: the same factory, configured already (a clear refusal); another salt, another one.
    let again: Error | undefined;
    try {
      await deployFactory(hre, { deploymentsDir: dir, salt: first.factory.salt });
    } catch (err) {
      again = err as Error;
    }
    expect(again?.message).to.match(/configured already/);
    const second = await deployFactory(hre, { deploymentsDir: dir, salt: randomSalt() });
    expect(second.factory.address).to.not.equal(first.factory.address);
    expect(readDeploymentRecord(dir, "hardhat")?.factory.address).to.equal(second.factory.address);
  });

  it("refuses to overwrite a record made on another chain id, before sending anything", async function () {
    const file = join(dir, "hardhat.json");
    const foreign = JSON.stringify({ network: "hardhat", chainId: 84532, factory: { address: "0x01" } });
    writeFileSync(file, foreign);
    const [deployer] = await ethers.getSigners();
    const nonceBefore = await ethers.provider.getTransactionCount(deployer.address);

    let error: unknown;
    try {
      await deployFactory(hre, { deploymentsDir: dir });
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(DeploymentChainMismatchError);
    expect((error as Error).message).to.match(/chain id 84532.*chain id 8453/);
    expect(readFileSync(file, "utf8")).to.equal(foreign);
    expect(await ethers.provider.getTransactionCount(deployer.address)).to.equal(nonceBefore);
  });

  it("records one OperatorSet member per instance key", async function () {
    const keys = [Wallet.createRandom().address, Wallet.createRandom().address, Wallet.createRandom().address];
    const record = await deployFactory(hre, { operators: keys, deploymentsDir: dir, salt: randomSalt() });
    expect(record.operatorSet.members).to.deep.equal(keys);
    const set = new Contract(
      record.operatorSet.address,
      ["function isOperator(address) view returns (bool)", "function operatorCount() view returns (uint256)"],
      ethers.provider,
    );
    expect(await set.operatorCount()).to.equal(3n);
    for (const k of keys) expect(await set.isOperator(k)).to.equal(true);
  });

  it("refuses an operator key that would own the OperatorSet and the factory, before sending anything", async function () {
    const [deployer] = await ethers.getSigners();
    const owner = Wallet.createRandom().address;
    const nonceBefore = await ethers.provider.getTransactionCount(deployer.address);
    // A stolen instance key would let any key in and out of the set (and repoint the factory) at will.
    for (const opts of [
      { operator: deployer.address },
      { operators: [Wallet.createRandom().address, deployer.address] },
      { operator: owner.toLowerCase(), owner },
    ]) {
      let error: Error | undefined;
      try {
        await deployFactory(hre, { ...opts, deploymentsDir: dir });
      } catch (err) {
        error = err as Error;
      }
      expect(error?.message, JSON.stringify(opts)).to.match(/must not be the owner/);
    }
    expect(await ethers.provider.getTransactionCount(deployer.address)).to.equal(nonceBefore);
    expect(readDeploymentRecord(dir, "hardhat")).to.equal(undefined);
  });

  it("rejects an operator or owner that is not an address", async function () {
    for (const opts of [
      { operator: "0x1234" },
      { owner: "not-an-address" },
      { operator: ethers.ZeroAddress },
      { usdc: "0x12" },
      { operators: ["0x12"] },
    ]) {
      let error: Error | undefined;
      try {
        await deployFactory(hre, { ...opts, deploymentsDir: dir });
      } catch (err) {
        error = err as Error;
      }
      expect(error?.message, JSON.stringify(opts)).to.match(/not an address|zero address/);
    }
  });
});
