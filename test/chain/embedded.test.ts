import { expect } from "chai";
import { Contract, JsonRpcProvider, getAddress } from "ethers";
import { DETERMINISTIC_DEPLOYER } from "../../src/chain/addresses";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";

const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  if (body.error) throw new Error(JSON.stringify(body.error));
  return body.result;
}

describe("embedded chain", function () {
  let chain: EmbeddedChain;
  let provider: JsonRpcProvider;

  before(async function () {
    const t0 = performance.now();
    chain = await startEmbeddedChain();
    console.log(`      (embedded chain started in ${Math.round(performance.now() - t0)} ms)`);
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
  });

  after(async function () {
    provider?.destroy();
    await chain?.close();
  });

  it("serves JSON-RPC on 127.0.0.1 with chain id 8453 (0x2105)", async function () {
    expect(chain.rpcUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(chain.chainId).to.equal(8453);
    expect(await rpc(chain.rpcUrl, "eth_chainId")).to.equal("0x2105");
  });

  it("has TestUSDC at the real Base USDC address, reporting USD Coin, version 2, 6 decimals", async function () {
    expect(chain.addresses.usdc).to.equal(BASE_USDC);
    const usdc = new Contract(
      BASE_USDC,
      [
        "function name() view returns (string)",
        "function symbol() view returns (string)",
        "function version() view returns (string)",
        "function decimals() view returns (uint8)",
        "function DOMAIN_SEPARATOR() view returns (bytes32)",
      ],
      provider,
    );
    expect(await usdc.name()).to.equal("USD Coin");
    expect(await usdc.symbol()).to.equal("USDC");
    expect(await usdc.version()).to.equal("2");
    expect(await usdc.decimals()).to.equal(6n);
    const { TypedDataEncoder } = await import("ethers");
    expect(await usdc.DOMAIN_SEPARATOR()).to.equal(
      TypedDataEncoder.hashDomain({ name: "USD Coin", version: "2", chainId: 8453, verifyingContract: BASE_USDC }),
    );
  });

  it("has Multicall3 at its canonical address", async function () {
    expect(chain.addresses.multicall3).to.equal(MULTICALL3);
    const mc = new Contract(
      MULTICALL3,
      ["function getChainId() view returns (uint256)", "function getBlockNumber() view returns (uint256)"],
      provider,
    );
    expect(await mc.getChainId()).to.equal(8453n);
    expect(await mc.getBlockNumber()).to.be.greaterThanOrEqual(BigInt(chain.deployBlock));
  });

  it("deployed the factory with the operator as defaultOperator and funded the keys", async function () {
    const factory = new Contract(
      chain.addresses.factory,
      ["function defaultOperator() view returns (address)", "function owner() view returns (address)"],
      provider,
    );
    expect(await factory.defaultOperator()).to.equal(chain.operator.address);
    expect(await factory.owner()).to.equal(chain.factoryOwner.address);
    const receipt = await provider.getTransactionReceipt(
      (await provider.getBlock(chain.deployBlock, true))?.prefetchedTransactions[0]?.hash ?? "",
    );
    // Through the deterministic deployment proxy (the same factory address on every network), at deployBlock.
    expect(receipt?.to).to.equal(getAddress(DETERMINISTIC_DEPLOYER.address));
    expect(await provider.getCode(chain.addresses.factory)).to.not.equal("0x");
    for (const key of [chain.operator, chain.facilitator]) {
      expect(key.privateKey).to.match(/^0x[0-9a-f]{64}$/);
      expect(await provider.getBalance(key.address)).to.be.greaterThan(10n ** 18n);
    }
    expect(chain.operator.address).to.not.equal(chain.facilitator.address);
  });

  it("refuses a second embedded chain in the same process while one runs", async function () {
    let error: Error | undefined;
    try {
      await startEmbeddedChain();
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).to.match(/already running in this process/);
  });
});
