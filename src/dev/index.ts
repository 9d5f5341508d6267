/**
 * The sandbox's one door. Embedded mode (no RPC_URL, no MONGODB_URI) runs a local chain (Hardhat with USDC, Uniswap
 * and the contracts), an in-memory CongoDB with its index layer, and the dev faucet; everything for it lives in
 * src/dev/, and production code reaches it only through this file, from the one place that starts it (src/start/boot.ts;
 * test/util/layers.test.ts checks it). Nothing here is loaded for work the service does on a real chain.
 */
import type { ChainClient } from "../chain/client";
import type { NetworkName } from "../chain/networks";
import type { EmbeddedChain } from "./embeddedChain";
import { startEmbeddedChainThread } from "./embeddedChainThread";
import { giveFromFaucet, type FaucetToken } from "./faucet";
import { startEmbeddedMongo, type EmbeddedMongo } from "./embeddedStore";
import { startEmbeddedMongoThread } from "./embeddedStoreThread";

export type { EmbeddedChain, EmbeddedKey } from "./embeddedChain";
export type { EmbeddedMongo } from "./embeddedStore";
export type { FaucetToken } from "./faucet";
export { DemoSchemeSellers } from "./schemeSellers";

/**
 * Starts the embedded chain of `network` on 127.0.0.1 (`port` 0: a free one): in a worker thread of its own
 * (`npm start`), or in this thread, where tests reach Hardhat directly.
 */
export async function startSandboxChain(opts: {
  network: NetworkName;
  port: number;
  thread: boolean;
  deployerKey?: string;
}): Promise<EmbeddedChain> {
  const chain = { network: opts.network, host: "127.0.0.1", port: opts.port, deployerKey: opts.deployerKey };
  if (opts.thread) return startEmbeddedChainThread(chain);
  // require, not import: the in-process chain loads Hardhat and the deployment code, which production never needs.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startEmbeddedChain } = require("./embeddedChain") as typeof import("./embeddedChain");
  return startEmbeddedChain(chain);
}

/**
 * The embedded chains of several networks, in order: the first as startSandboxChain would (`first`, or started here on
 * `port`), every other one in a worker thread of its own (Hardhat's network is one per thread) on a free port, its
 * factory deployed by the first one's deployer (so at the same address). All are closed if one fails to start.
 */
export async function startSandboxChains(
  networks: readonly NetworkName[],
  opts: { port: number; thread: boolean; first?: EmbeddedChain },
): Promise<EmbeddedChain[]> {
  const started: EmbeddedChain[] = [];
  try {
    for (const [i, network] of networks.entries()) {
      if (i === 0 && opts.first) started.push(opts.first);
      else {
        // The first chain's factory deployer deploys on every other: one factory address, one agent address everywhere.
        const deployerKey = started[0]?.factoryOwner.privateKey;
        started.push(
          await startSandboxChain({ network, port: i === 0 ? opts.port : 0, thread: i === 0 ? opts.thread : true, deployerKey }),
        );
      }
    }
    return started;
  } catch (err) {
    await Promise.all(started.filter((c) => c !== opts.first).map((c) => c.close().catch(() => undefined)));
    throw err;
  }
}

/** The embedded store: its URI and stop(); `mongo` when it runs in this thread (its index layer is readable there). */
export interface SandboxStore {
  uri: string;
  stop(): Promise<void>;
  mongo?: EmbeddedMongo;
}

/** Starts the embedded store, in a worker thread of its own (`npm start`) or in this thread. */
export async function startSandboxStore(opts: { thread: boolean }): Promise<SandboxStore> {
  if (opts.thread) return startEmbeddedMongoThread();
  const mongo = await startEmbeddedMongo();
  return { uri: mongo.uri, stop: () => mongo.stop(), mongo };
}

/**
 * The dev faucet on `chain` (WETH at `weth`; null: none on this network): gives `units` of `token` to `to` and answers
 * the delivering transaction's hash.
 */
export function sandboxFaucet(chain: ChainClient, weth: string | null): (to: string, token: FaucetToken, units: bigint) => Promise<string> {
  return (to, token, units) => giveFromFaucet(chain, weth, to, token, units);
}
