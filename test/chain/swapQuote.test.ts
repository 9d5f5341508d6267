import { expect } from "chai";
import hre from "hardhat";
import { JsonRpcProvider, type Contract } from "ethers";
import { UNISWAP_POOL_FEE, WETH_ADDRESS } from "../../src/chain/addresses";
import { quoteSwap, readTwapTick } from "../../src/chain/swapQuote";
import { createPool, fundTrader, swapExactIn, swapExactOut, uniswapAt, wethForUsdc } from "../helpers/uniswap";
import { embeddedChainPerFile } from "../helpers/embeddedChain";

const USDC = (n: bigint) => n * 10n ** 6n;
const ETH = (n: bigint) => n * 10n ** 18n;

describe("off-chain swap quote (QuoterV2 + the TWAP bound) on the embedded Uniswap v3", function () {
  const chain = embeddedChainPerFile();
  let provider: JsonRpcProvider;
  let harness: Contract;
  let snapshot: string;

  before(async function () {
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    harness = (await hre.ethers.deployContract("SwapBoundHarness")) as unknown as Contract;
    const [trader, attacker] = await hre.ethers.getSigners();
    await fundTrader(chain.addresses.uniswap, chain.addresses.usdc, trader, ETH(100n), USDC(100_000n));
    await fundTrader(chain.addresses.uniswap, chain.addresses.usdc, attacker, ETH(1_000n), 0n);
  });
  beforeEach(async function () {
    snapshot = (await hre.network.provider.request({ method: "evm_snapshot", params: [] })) as string;
  });
  afterEach(async function () {
    await hre.network.provider.request({ method: "evm_revert", params: [snapshot] });
  });
  after(function () {
    provider?.destroy();
  });

  const request = (amountOut: bigint, over: Parameters<typeof wethForUsdc>[2] = {}) => wethForUsdc(chain, amountOut, over);

  it("quotes what SwapRouter02 then spends, under the same bound the contract computes", async function () {
    const r = await quoteSwap(provider, request(USDC(1_234n)));
    if (!r.ok) throw new Error(`expected a quote, got ${r.reason}`);
    const [onChainBound, onChainTick] = await harness.maxAmountIn(
      chain.addresses.uniswap.factory,
      WETH_ADDRESS,
      chain.addresses.usdc,
      UNISWAP_POOL_FEE,
      USDC(1_234n),
      1800,
      50,
    );
    expect(r.quote.maxAmountIn).to.equal(onChainBound);
    expect(r.quote.twapTick).to.equal(Number(onChainTick));
    expect(r.quote.pool).to.equal(chain.addresses.uniswap.usdcWethPool);
    expect(r.quote.amountIn < r.quote.maxAmountIn).to.equal(true);

    const [trader] = await hre.ethers.getSigners();
    const u = uniswapAt(chain.addresses.uniswap, trader);
    const before = await u.weth.balanceOf(trader.address);
    await (
      await swapExactOut(u.router, {
        tokenOut: chain.addresses.usdc,
        recipient: trader.address,
        amountOut: USDC(1_234n),
        amountInMaximum: r.quote.maxAmountIn,
      })
    ).wait();
    expect(before - (await u.weth.balanceOf(trader.address))).to.equal(r.quote.amountIn);
  });

  it("refuses with swap_slippage_exceeded after the price is pushed (sandwich), naming both amounts", async function () {
    const [, attacker] = await hre.ethers.getSigners();
    const u = uniswapAt(chain.addresses.uniswap, attacker);
    await (await swapExactIn(u.router, { tokenOut: chain.addresses.usdc, recipient: attacker.address, amountIn: ETH(300n) })).wait();
    const r = await quoteSwap(provider, request(USDC(1_000n)));
    expect(r.ok).to.equal(false);
    if (r.ok || r.reason !== "swap_slippage_exceeded")
      throw new Error(`expected swap_slippage_exceeded, got ${JSON.stringify(r, (_k, v) => (typeof v === "bigint" ? `${v}` : v))}`);
    expect(r.quote.amountIn > r.quote.maxAmountIn).to.equal(true);
    // The dump moved the price about 18%: a 25% allowance accepts it. The bound, not the quote, decides.
    const wide = await quoteSwap(provider, request(USDC(1_000n), { maxSlippageBps: 2_500 }));
    expect(wide.ok).to.equal(true);
  });

  it("answers swap_unavailable for a fee tier without a pool, a pool younger than the window and an amount beyond the liquidity", async function () {
    const noPool = await quoteSwap(provider, request(USDC(10n), { fee: 100 }));
    expect(noPool).to.include({ ok: false, reason: "swap_unavailable" });

    const [, , lp] = await hre.ethers.getSigners();
    const young = await createPool({
      a: chain.addresses.uniswap,
      usdc: chain.addresses.usdc,
      token: WETH_ADDRESS,
      fee: 3_000,
      price: 3_000n,
      lp,
    });
    expect(await readTwapTick(provider, young, 60)).to.equal(null);
    const r = await quoteSwap(provider, request(USDC(10n), { fee: 3_000, twapSeconds: 60 }));
    expect(r).to.include({ ok: false, reason: "swap_unavailable" });

    const tooMuch = await quoteSwap(provider, request(USDC(50_000_000n)));
    expect(tooMuch).to.include({ ok: false, reason: "swap_unavailable" });
    for (const bad of [request(USDC(1n), { twapSeconds: 0 }), request(USDC(1n), { twapSeconds: 1.5 }), request(0n), request(2n ** 128n)]) {
      expect(await quoteSwap(provider, bad)).to.include({ ok: false, reason: "swap_unavailable" });
    }
  });
});
