import { expect } from "chai";
import hre from "hardhat";
import { Contract, JsonRpcProvider, ZeroAddress } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../../src/chain/addresses";
import { readTwapTick } from "../../src/chain/swapQuote";
import { quoteAtTick } from "../../src/chain/uniswapMath";
import { fundTrader, swapExactOut, uniswapAt } from "../helpers/uniswap";
import { embeddedChainPerFile } from "../helpers/embeddedChain";

describe("embedded chain: real Uniswap v3", function () {
  const chain = embeddedChainPerFile();
  let provider: JsonRpcProvider;
  let startedAt: number;

  before(function () {
    startedAt = Math.floor(Date.now() / 1000);
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
  });
  after(function () {
    provider?.destroy();
  });

  it("ends its start-up with the chain's clock on the wall clock (EIP-3009 windows come from the wall clock)", async function () {
    const block = await provider.getBlock("latest");
    expect(block!.timestamp).to.be.within(startedAt - 5, Math.floor(Date.now() / 1000) + 2);
  });

  it("has WETH9 at Base's WETH address, wrapping and unwrapping", async function () {
    const [user] = await hre.ethers.getSigners();
    const weth = new Contract(
      WETH_ADDRESS,
      [
        "function name() view returns (string)",
        "function symbol() view returns (string)",
        "function decimals() view returns (uint8)",
        "function balanceOf(address) view returns (uint256)",
        "function deposit() payable",
        "function withdraw(uint256)",
      ],
      user,
    );
    expect([await weth.name(), await weth.symbol(), await weth.decimals()]).to.deep.equal(["Wrapped Ether", "WETH", 18n]);
    await (await weth.deposit({ value: 5n })).wait();
    await (await weth.withdraw(2n)).wait();
    expect(await weth.balanceOf(user.address)).to.equal(3n);
  });

  it("wires SwapRouter02 and QuoterV2 to the factory and WETH, without Uniswap v2", async function () {
    const [user] = await hre.ethers.getSigners();
    const u = uniswapAt(chain.addresses.uniswap, user);
    expect(await u.router.factory()).to.equal(chain.addresses.uniswap.factory);
    expect(await u.router.WETH9()).to.equal(WETH_ADDRESS);
    expect(await u.router.factoryV2()).to.equal(ZeroAddress);
    expect(await u.router.positionManager()).to.equal(chain.addresses.uniswap.positionManager);
    expect(await u.quoter.factory()).to.equal(chain.addresses.uniswap.factory);
    expect(await u.quoter.WETH9()).to.equal(WETH_ADDRESS);
  });

  it("has a USDC/WETH 0.05% pool near 3,000 USDC per ETH, 100 observations and an hour of history", async function () {
    const [user] = await hre.ethers.getSigners();
    const pool = uniswapAt(chain.addresses.uniswap, user).pool(chain.addresses.uniswap.usdcWethPool);
    expect([await pool.token0(), await pool.token1(), Number(await pool.fee())]).to.deep.equal([
      WETH_ADDRESS,
      chain.addresses.usdc,
      UNISWAP_POOL_FEE,
    ]);
    expect(await pool.liquidity()).to.be.greaterThan(0n);
    const slot0 = await pool.slot0();
    expect(Number(slot0.observationCardinality)).to.equal(100);
    for (const w of [60, 1800, 3000]) {
      const tick = await readTwapTick(provider, chain.addresses.uniswap.usdcWethPool, w);
      const usdcPerEth = quoteAtTick(tick!, 10n ** 18n, WETH_ADDRESS, chain.addresses.usdc);
      expect(Number(usdcPerEth) / 1e6, `TWAP ${w} s`).to.be.within(2_970, 3_030);
    }
  });

  it("is deep enough that a 5,000 USDC swap moves the price by less than 0.5%", async function () {
    const [, trader] = await hre.ethers.getSigners();
    await fundTrader(chain.addresses.uniswap, chain.addresses.usdc, trader, 10n ** 19n, 0n);
    const u = uniswapAt(chain.addresses.uniswap, trader);
    const pool = u.pool(chain.addresses.uniswap.usdcWethPool);
    const before: bigint = (await pool.slot0()).sqrtPriceX96;
    await (
      await swapExactOut(u.router, {
        tokenOut: chain.addresses.usdc,
        recipient: trader.address,
        amountOut: 5_000n * 10n ** 6n,
        amountInMaximum: 10n ** 19n,
      })
    ).wait();
    const after: bigint = (await pool.slot0()).sqrtPriceX96;
    const priceRatio = Number((after * after * 1_000_000n) / (before * before)) / 1e6;
    expect(priceRatio).to.be.within(0.995, 1.005);
  });
});
