/**
 * The sandbox's one door. Embedded mode (no RPC_URL, no MONGODB_URI) runs a local chain (Hardhat with USDC, Uniswap
 * and the contracts), an in-memory CongoDB with its index layer, and the dev faucet; everything for it lives in
 * src/dev/, and production code reaches it only through this file, from the one place that starts it (src/start/boot.ts;
 * test/util/layers.test.ts checks it). Nothing here is loaded for work the service does on a real chain.
 */
import type { ChainClient } from "../chain/client";
import type { EmbeddedChain } from "./embeddedChain";
import { startEmbeddedChainThread } from "./embeddedChainThread";
import { giveFromFaucet, type FaucetToken } from "./faucet";
import { startEmbeddedMongo, type EmbeddedMongo } from "./embeddedStore";
import { startEmbeddedMongoThread } from "./embeddedStoreThread";

export type { EmbeddedChain, EmbeddedKey } from "./embeddedChain";
export type { EmbeddedMongo } from "./embeddedStore";
export type { FaucetToken } from "./faucet";

/**
 * Starts the embedded chain on 127.0.0.1 (`port` 0: a free one): in a worker thread of its own (`npm start`), or in
 * this thread, where tests reach Hardhat directly.
 */
export async function startSandboxChain(opts: { port: number; thread: boolean }): Promise<EmbeddedChain> {
  if (opts.thread) return startEmbeddedChainThread({ host: "127.0.0.1", port: opts.port });
  // require, not import: the in-process chain loads Hardhat and the deployment code, which production never needs.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startEmbeddedChain } = require("./embeddedChain") as typeof import("./embeddedChain");
  return startEmbeddedChain({ host: "127.0.0.1", port: opts.port });
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

/** The dev faucet on `chain`: gives `units` of `token` to `to` and answers the delivering transaction's hash. */
export function sandboxFaucet(chain: ChainClient): (to: string, token: FaucetToken, units: bigint) => Promise<string> {
  return (to, token, units) => giveFromFaucet(chain, to, token, units);
}
