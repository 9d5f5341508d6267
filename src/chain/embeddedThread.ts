/**
 * The embedded chain in its own worker thread: the same chain as startEmbeddedChain (src/chain/embedded.ts), whose EVM
 * execution and JSON-RPC serving then run on the second core instead of the service's event loop. The service reaches
 * it over JSON-RPC on 127.0.0.1 either way, so nothing else changes; what is lost is in-process access to Hardhat
 * (hre, network helpers), which is why tests that use it keep the in-process chain. Each thread has its own Hardhat, so
 * a threaded chain can run beside an in-process one.
 */
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { EmbeddedChain } from "./embedded";

export interface ChainThreadOptions {
  port?: number;
  host?: string;
  operators?: string[];
}

export type ChainThreadMessage = { type: "ready"; chain: Omit<EmbeddedChain, "close"> };

export interface EmbeddedChainThread extends EmbeddedChain {
  /** The chain's thread: its 'exit' event follows close(). */
  worker: Worker;
}

const CLOSE_TIMEOUT_MS = 10_000;

/**
 * The worker runs TypeScript whatever started this process (the tsx CLI, `node --import tsx`, mocha with tsx/cjs):
 * it registers tsx's require hook itself, by absolute paths so that any working directory works.
 */
function bootstrap(): string {
  const tsx = require.resolve("tsx/cjs");
  const body = join(__dirname, "embeddedWorker.ts");
  return `require(${JSON.stringify(tsx)});\nrequire(${JSON.stringify(body)});\n`;
}

/** Starts the embedded chain in a worker thread; close() stops its server and ends the thread. */
export async function startEmbeddedChainThread(opts: ChainThreadOptions = {}): Promise<EmbeddedChainThread> {
  const worker = new Worker(bootstrap(), { eval: true, workerData: opts });
  const exited = new Promise<number>((resolve) => worker.once("exit", resolve));
  const info = await new Promise<ChainThreadMessage["chain"]>((resolve, reject) => {
    worker.once("message", (msg: ChainThreadMessage) => {
      resolve(msg.chain);
    });
    worker.once("error", reject);
    void exited.then((code) => {
      reject(new Error(`the embedded chain thread exited (code ${code}) before it was ready`));
    });
  }).catch(async (err: unknown) => {
    // The thread ends on its own after a failed start; make sure of it before answering.
    await Promise.race([exited, new Promise((r) => setTimeout(r, CLOSE_TIMEOUT_MS).unref())]);
    await worker.terminate();
    throw err;
  });
  // After start, a failure in the chain's thread is as fatal as one on this thread would be with the in-process chain.
  worker.on("error", (err) => {
    throw new Error(`the embedded chain thread failed: ${err.message}`, { cause: err });
  });
  let closing: Promise<void> | undefined;
  return {
    ...info,
    worker,
    close() {
      closing ??= (async () => {
        worker.postMessage("close");
        const timer = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS);
        const code = await exited;
        clearTimeout(timer);
        if (code !== 0) throw new Error(`the embedded chain thread ended with code ${code}`);
      })();
      return closing;
    },
  };
}
