import { expect } from "chai";
import { Contract, JsonRpcProvider } from "ethers";
import { startEmbeddedChain } from "../../src/dev/embeddedChain";
import { startEmbeddedChainThread, type EmbeddedChainThread } from "../../src/dev/embeddedChainThread";
import { startStack } from "../helpers/stack";
import { osThreads } from "../helpers/threads";

const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

describe("embedded chain in its own thread", function () {
  let chain: EmbeddedChainThread;
  let provider: JsonRpcProvider;

  before(async function () {
    chain = await startEmbeddedChainThread();
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
  });

  after(async function () {
    provider?.destroy();
    await chain?.close();
  });

  it("serves chain id 8453 on 127.0.0.1 from another thread than this one", async function () {
    expect(chain.rpcUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(chain.chainId).to.equal(8453);
    expect(await provider.send("eth_chainId", [])).to.equal("0x2105");
    expect(chain.worker.threadId).to.be.greaterThan(0);
  });

  it("has USDC at the Base address and the factory deployed, owned and operated by the keys it hands out", async function () {
    expect(chain.addresses.usdc).to.equal(BASE_USDC);
    expect((await provider.getCode(BASE_USDC)).length).to.be.greaterThan(2);
    expect((await provider.getCode(chain.addresses.factory)).length).to.be.greaterThan(2);
    const factory = new Contract(
      chain.addresses.factory,
      ["function defaultOperator() view returns (address)", "function owner() view returns (address)"],
      provider,
    );
    expect(await factory.defaultOperator()).to.equal(chain.operator.address);
    expect(await factory.owner()).to.equal(chain.factoryOwner.address);
    expect(await provider.getBlockNumber()).to.be.greaterThanOrEqual(chain.deployBlock);
    expect(await provider.getBalance(chain.facilitator.address)).to.be.greaterThan(10n ** 18n);
  });

  it("runs beside an in-process chain: each thread has its own Hardhat", async function () {
    const local = await startEmbeddedChain();
    try {
      expect(local.rpcUrl).to.not.equal(chain.rpcUrl);
      expect(local.addresses.factory).to.not.equal(chain.addresses.factory);
      expect(await provider.getCode(chain.addresses.factory)).to.not.equal("0x");
    } finally {
      await local.close();
    }
  });

  it("rejects a failed start and ends its thread", async function () {
    const threads = osThreads();
    let error: Error | undefined;
    try {
      await startEmbeddedChainThread({ operators: ["not-an-address"] });
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).to.match(/not-an-address/);
    expect(osThreads()).to.be.at.most(threads);
    expect(await provider.send("eth_chainId", [])).to.equal("0x2105");
  });

  it("close() stops the server and ends the thread, even with interval mining on (timers in the thread)", async function () {
    const threads = osThreads();
    const other = await startEmbeddedChainThread();
    expect(osThreads()).to.be.greaterThan(threads);
    const rpc = new JsonRpcProvider(other.rpcUrl, other.chainId, { staticNetwork: true });
    await rpc.send("evm_setIntervalMining", [200]);
    rpc.destroy();
    const exit = new Promise<number>((resolve) => other.worker.once("exit", resolve));
    await other.close();
    expect(await exit).to.equal(0);
    expect(other.worker.threadId).to.equal(-1);
    expect(osThreads()).to.be.at.most(threads);
    let refused: Error | undefined;
    try {
      await fetch(other.rpcUrl, { method: "POST", body: "{}" });
    } catch (err) {
      refused = err as Error;
    }
    expect(refused, "the RPC port still answers").to.not.equal(undefined);
    await other.close(); // a second close is a no-op
  });

  it("runs, with the store in a thread too, a service started as npm start starts it; closing the service ends both", async function () {
    const threads = osThreads();
    const s = await startStack({}, { chainThread: true, storeThread: true });
    const thread = (s.svc.embeddedChain as EmbeddedChainThread).worker;
    let exitCode: number | undefined;
    thread.once("exit", (code) => (exitCode = code));
    try {
      expect(thread.threadId).to.be.greaterThan(0);
      expect(s.svc.embeddedMongo, "the store is not on this thread").to.equal(undefined);
      expect(osThreads()).to.be.at.least(threads + 2);
      const health = await s.api("GET", "/health");
      expect(health.body).to.include({ status: "ok", store: "ok", chain: "ok", chainId: 8453 });
      const agent = await s.genesis();
      expect(agent.agentAddress).to.match(/^0x[0-9a-fA-F]{40}$/);
    } finally {
      await s.close();
    }
    expect(exitCode).to.equal(0);
    expect(osThreads()).to.be.at.most(threads);
  });
});
