/**
 * The embedded chain: Hardhat's in-process network (chain id 8453, automine) served as JSON-RPC on 127.0.0.1, with
 * TestUSDC's code at the real Base USDC address, Multicall3 at its canonical address, real Uniswap v3 (WETH9 at
 * Base's WETH address, a USDC/WETH 0.05% pool with an hour of TWAP history: src/dev/uniswap.ts) and a fresh
 * SpendPolicyFactory.
 *
 * This runs the chain on the calling thread; `npm start` runs it in a worker thread of its own instead
 * (startEmbeddedChainThread in embeddedChainThread.ts, which calls this there), off the service's event loop. Tests that
 * use Hardhat directly (hre, network helpers, loadFixture) need it on their own thread, as here.
 *
 * Hardhat's runtime environment is a singleton per thread (per module instance), so there is one embedded chain per
 * thread at a time: a second start while one is running throws; after close() a new start resets the network
 * (hardhat_reset, which also forgets loadFixture snapshots) and begins again from genesis. Hardhat is loaded only when
 * this is called, so production (RPC_URL set) never loads it. Needs compiled artifacts (`npx hardhat compile`; `npm
 * start` does it).
 */
import { Wallet } from "ethers";
import { join } from "node:path";
import { PROJECT_ROOT } from "../paths";
import type { HardhatRuntimeEnvironment, JsonRpcServer } from "hardhat/types";
import { BASE_USDC, MULTICALL3_ADDRESS } from "../chain/addresses";
import { FACTORY_SALT, deployFactoryContract, deployOperatorSet, swapConfigOf } from "../chain/deploy";
import { placeX402SchemeContracts } from "./x402Schemes";
import { EMBEDDED_HISTORY_SECONDS, deployEmbeddedUniswap, type UniswapAddresses } from "./uniswap";

export interface EmbeddedKey {
  address: string;
  privateKey: string;
}

export interface EmbeddedChain {
  /** http://127.0.0.1:<port> */
  rpcUrl: string;
  /** 8453 */
  chainId: number;
  addresses: { usdc: string; multicall3: string; factory: string; uniswap: UniswapAddresses; operatorSet?: string };
  /** Block of the factory deployment. */
  deployBlock: number;
  /** Random key, funded with ETH, the factory's defaultOperator. */
  operator: EmbeddedKey;
  /** Random key, funded with ETH, for the in-process x402 facilitator. */
  facilitator: EmbeddedKey;
  /** Random key, funded with ETH, that deployed and owns the factory. */
  factoryOwner: EmbeddedKey;
  close(): Promise<void>;
}

const FUNDING_WEI = 10n ** 22n; // 10 000 ETH each

let running = false;

/** Starts the embedded chain; `port` 0 (default) picks a free port. One per thread at a time (see above). */
export async function startEmbeddedChain(opts: { port?: number; host?: string; operators?: string[] } = {}): Promise<EmbeddedChain> {
  if (running) {
    throw new Error(
      "startEmbeddedChain: an embedded chain is already running in this process (Hardhat's network is a " +
        "per-process singleton); close() it first or share it",
    );
  }
  running = true;
  let server: JsonRpcServer | undefined;
  try {
    // Hardhat looks for its config from the working directory; point it at ours so any cwd works.
    process.env.HARDHAT_CONFIG ??= join(PROJECT_ROOT, "hardhat.config.ts");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const hre = require("hardhat") as HardhatRuntimeEnvironment;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { TASK_NODE_CREATE_SERVER } = require("hardhat/builtin-tasks/task-names") as { TASK_NODE_CREATE_SERVER: string };
    if (hre.network.name !== "hardhat") {
      throw new Error(`startEmbeddedChain needs the in-process hardhat network, not "${hre.network.name}"`);
    }
    const provider = hre.network.provider;
    await resetNetwork(hre, EMBEDDED_HISTORY_SECONDS);

    const [usdcArtifact, multicallArtifact, wethArtifact] = await Promise.all([
      readArtifact(hre, "TestUSDC"),
      readArtifact(hre, "Multicall3"),
      readArtifact(hre, "WETH9"),
    ]);
    await provider.request({ method: "hardhat_setCode", params: [BASE_USDC, usdcArtifact.deployedBytecode] });
    await provider.request({ method: "hardhat_setCode", params: [MULTICALL3_ADDRESS, multicallArtifact.deployedBytecode] });
    await placeX402SchemeContracts(provider); // x402 upto/batch-settlement contracts (sandbox stand-ins)

    const [deployer, operator, facilitator] = [Wallet.createRandom(), Wallet.createRandom(), Wallet.createRandom()];
    for (const w of [deployer, operator, facilitator]) {
      await provider.request({ method: "hardhat_setBalance", params: [w.address, `0x${FUNDING_WEI.toString(16)}`] });
    }
    // Sent as eth_sendTransaction from an impersonated account: no local signing, a third of the start-up time.
    const uniswap = await deployEmbeddedUniswap({
      provider,
      deployer: await hre.ethers.getImpersonatedSigner(deployer.address),
      usdc: BASE_USDC,
      weth9Code: wethArtifact.deployedBytecode,
    });
    // With more instance keys (a cluster), an OperatorSet of all of them is the factory's default operator.
    let operatorSet: string | undefined;
    if (opts.operators?.length) {
      for (const a of opts.operators)
        await provider.request({ method: "hardhat_setBalance", params: [a, `0x${FUNDING_WEI.toString(16)}`] });
      operatorSet = (
        await deployOperatorSet(hre, deployer.connect(hre.ethers.provider), deployer.address, [operator.address, ...opts.operators])
      ).address;
    }
    const deployed = await deployFactoryContract(
      hre,
      deployer.connect(hre.ethers.provider),
      deployer.address,
      operatorSet ?? operator.address,
      BASE_USDC,
      1,
      swapConfigOf(uniswap),
      // Through the deterministic deployment proxy, as on a real network: the same factory and agent addresses on
      // every embedded network.
      FACTORY_SALT,
    );

    const hostname = opts.host ?? "127.0.0.1";
    server = (await hre.run(TASK_NODE_CREATE_SERVER, { hostname, port: opts.port ?? 0, provider })) as JsonRpcServer;
    const { port } = await server.listen();
    const chainId = Number(await provider.request({ method: "eth_chainId" }));
    const srv = server;
    let closed = false;
    return {
      rpcUrl: `http://${urlHost(hostname)}:${port}`,
      chainId,
      addresses: {
        usdc: BASE_USDC,
        multicall3: MULTICALL3_ADDRESS,
        factory: deployed.address,
        uniswap,
        ...(operatorSet ? { operatorSet } : {}),
      },
      deployBlock: deployed.block ?? 0,
      operator: keyOf(operator),
      facilitator: keyOf(facilitator),
      factoryOwner: keyOf(deployer),
      async close() {
        if (closed) return;
        closed = true;
        try {
          await srv.close();
        } finally {
          running = false;
        }
      },
    };
  } catch (err) {
    if (server) await server.close().catch(() => undefined);
    running = false;
    throw err;
  }
}

function keyOf(w: { address: string; privateKey: string }): EmbeddedKey {
  return { address: w.address, privateKey: w.privateKey };
}

function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

async function readArtifact(hre: HardhatRuntimeEnvironment, name: string) {
  let artifact;
  try {
    artifact = await hre.artifacts.readArtifact(name);
  } catch (err) {
    throw new Error(`artifact ${name} not found: run \`npx hardhat compile\` first (${(err as Error).message})`);
  }
  if (Object.keys(artifact.deployedLinkReferences).length > 0) throw new Error(`${name} needs linked libraries`);
  return artifact;
}

/**
 * hardhat_reset through the network helpers when present, so loadFixture snapshots of earlier tests are dropped,
 * with the new genesis `secondsInThePast` before the wall clock (the Uniswap set-up then mines its price history
 * up to the wall clock). Hardhat has no RPC for a genesis date: this sets the in-process provider's `initialDate`
 * for this one reset (Hardhat 2.29's EDR wrapper keeps it in `_providerConfig`). Without that wrapper the chain
 * starts now and the pool's history is only as old as the chain.
 */
async function resetNetwork(hre: HardhatRuntimeEnvironment, secondsInThePast: number): Promise<void> {
  let helpers: { reset(): Promise<void> } | undefined;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    helpers = require("@nomicfoundation/hardhat-network-helpers") as { reset(): Promise<void> };
  } catch {
    helpers = undefined;
  }
  await hre.network.provider.request({ method: "eth_chainId" }); // the provider is created lazily
  const edr = edrWrapper(hre.network.provider);
  const before = edr?._providerConfig.initialDate;
  if (edr) edr._providerConfig.initialDate = BigInt(Math.floor(Date.now() / 1000) - secondsInThePast);
  try {
    if (helpers) await helpers.reset();
    else await hre.network.provider.request({ method: "hardhat_reset", params: [] });
  } finally {
    if (edr) edr._providerConfig.initialDate = before;
  }
}

interface EdrWrapper {
  _providerConfig: { initialDate?: bigint };
}

function edrWrapper(provider: unknown, depth = 0): EdrWrapper | undefined {
  if (!provider || typeof provider !== "object" || depth > 8) return undefined;
  const p = provider as Record<string, unknown>;
  const config = p._providerConfig;
  if (config && typeof config === "object" && "chainId" in config) return p as unknown as EdrWrapper;
  for (const key of ["_wrapped", "_provider", "_wrappedProvider"]) {
    const found = edrWrapper(p[key], depth + 1);
    if (found) return found;
  }
  return undefined;
}
