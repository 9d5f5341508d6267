/**
 * The embedded chain in its own worker thread: the same chain as startEmbeddedChain (src/dev/embeddedChain.ts), whose EVM
 * execution and JSON-RPC serving then run on the second core instead of the service's event loop. The service reaches
 * it over JSON-RPC on 127.0.0.1 either way, so nothing else changes; what is lost is in-process access to Hardhat
 * (hre, network helpers), which is why tests that use it keep the in-process chain. Each thread has its own Hardhat, so
 * a threaded chain can run beside an in-process one.
 */
import { extname, join } from "node:path";
import type { Worker } from "node:worker_threads";
import { startInThread } from "../util/workerThread";
import type { EmbeddedChain, EmbeddedChainOptions } from "./embeddedChain";

export type ChainThreadOptions = EmbeddedChainOptions;

/** What the chain's thread answers: everything but close(). */
export type ChainThreadInfo = Omit<EmbeddedChain, "close">;

export interface EmbeddedChainThread extends EmbeddedChain {
  /** The chain's thread: its 'exit' event follows close(). */
  worker: Worker;
}

/** Starts the embedded chain in a worker thread; close() stops its server and ends the thread. */
export async function startEmbeddedChainThread(opts: ChainThreadOptions = {}): Promise<EmbeddedChainThread> {
  const thread = await startInThread<ChainThreadInfo>(join(__dirname, `embeddedChainWorker${extname(__filename)}`), opts);
  return { ...thread.info, worker: thread.worker, close: () => thread.close() };
}
