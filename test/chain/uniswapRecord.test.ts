import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UNISWAP_ADDRESSES, USDC_ADDRESSES, WETH_ADDRESS } from "../../src/chain/addresses";
import { deployFactory } from "../../src/chain/deploy";
import type { DeploymentRecord } from "../../src/chain/deploymentRecord";
import { deployEmbeddedUniswap } from "../../src/dev/uniswap";
import { poolAddress } from "../../src/chain/uniswapMath";
import { UNISWAP_SOURCE, uniswapRecord } from "../../src/chain/uniswapRecord";

const { ethers } = hre;

describe("Uniswap v3 in the deployment record", function () {
  let dir: string;
  let clean: string;
  before(async function () {
    clean = (await hre.network.provider.request({ method: "evm_snapshot", params: [] })) as string;
    const testUsdc = await hre.artifacts.readArtifact("TestUSDC");
    await hre.network.provider.request({ method: "hardhat_setCode", params: [USDC_ADDRESSES[8453], testUsdc.deployedBytecode] });
    dir = mkdtempSync(join(tmpdir(), "spendgate-deployments-"));
  });
  after(async function () {
    rmSync(dir, { recursive: true, force: true });
    // Later test files share Hardhat's network and its default accounts: leave them as we found them.
    if (clean) await hre.network.provider.request({ method: "evm_revert", params: [clean] });
  });

  it("knows Base's and Base Sepolia's contracts, and derives Base's USDC/WETH 0.05% pool from the factory", function () {
    expect(UNISWAP_ADDRESSES[8453]).to.deep.equal({
      factory: "0x33128a8fC17869897dcE68Ed026d694621f6FDfD",
      swapRouter02: "0x2626664c2603336E57B271c5C0b26F421741e481",
      quoterV2: "0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a",
      positionManager: "0x03a520b32C04BF3bEEf7BEb72E919cf822Ed34f1",
    });
    expect(UNISWAP_ADDRESSES[84532].factory).to.equal("0x4752ba5DBc23f44D87826276BF6Fd6b1C372aD24");
    // The pool every Base explorer lists as Uniswap v3 WETH/USDC 0.05%.
    expect(poolAddress(UNISWAP_ADDRESSES[8453].factory, WETH_ADDRESS, USDC_ADDRESSES[8453], 500)).to.equal(
      "0xd0b53D9277642d899DF5C87A3966A349A798F224",
    );
  });

  it("records no Uniswap on a hardhat dry run without it, and refuses a live network where Base's addresses hold no code", async function () {
    const record = await deployFactory(hre, { deploymentsDir: dir, salt: hre.ethers.hexlify(hre.ethers.randomBytes(32)) });
    expect(record.uniswap).to.equal(null);
    let error: Error | undefined;
    try {
      await uniswapRecord({ provider: ethers.provider, chainId: 8453, network: "base", usdc: USDC_ADDRESSES[8453] });
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).to.match(/no Uniswap v3 contract on base at: .*factory 0x33128a8fC17869897dcE68Ed026d694621f6FDfD/);
  });

  it("records the router, quoter, factory, WETH and the USDC/WETH pool confirmed by the factory", async function () {
    const [deployer] = await ethers.getSigners();
    const weth9 = await hre.artifacts.readArtifact("WETH9");
    const a = await deployEmbeddedUniswap({
      provider: hre.network.provider,
      deployer,
      usdc: USDC_ADDRESSES[8453],
      weth9Code: weth9.deployedBytecode,
    });
    const { factory, swapRouter02, quoterV2, positionManager } = a;
    const salt = hre.ethers.hexlify(hre.ethers.randomBytes(32)); // another factory than the other tests deploy
    const record = await deployFactory(hre, { deploymentsDir: dir, salt, uniswap: { factory, swapRouter02, quoterV2, positionManager } });
    expect(record.uniswap).to.deep.equal({
      weth: WETH_ADDRESS,
      factory,
      swapRouter02,
      quoterV2,
      positionManager,
      usdcWethPool: a.usdcWethPool,
      poolFee: 500,
      source: "given to the deploy script",
    });
    const onDisk = JSON.parse(readFileSync(join(dir, "hardhat.json"), "utf8")) as DeploymentRecord;
    expect(onDisk.uniswap).to.deep.equal(record.uniswap);
    expect(UNISWAP_SOURCE).to.match(/^https:\/\/docs\.uniswap\.org\//);
  });
});
