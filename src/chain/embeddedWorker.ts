/**
 * The body of the embedded chain's worker thread (src/chain/embeddedThread.ts starts it): starts the chain in this
 * thread, posts what the service needs to reach it, and on "close" stops the server and ends the thread.
 */
import { parentPort, workerData } from "node:worker_threads";
import { startEmbeddedChain, type EmbeddedChain } from "./embedded";
import type { ChainThreadMessage, ChainThreadOptions } from "./embeddedThread";

async function main(port: NonNullable<typeof parentPort>): Promise<void> {
  const chain: EmbeddedChain = await startEmbeddedChain(workerData as ChainThreadOptions);
  // Everything but close(), which stays here (a function cannot cross threads).
  const { rpcUrl, chainId, addresses, deployBlock, operator, facilitator, factoryOwner } = chain;
  const info = { rpcUrl, chainId, addresses, deployBlock, operator, facilitator, factoryOwner };
  port.on("message", (msg: unknown) => {
    if (msg !== "close") return;
    // Hardhat's provider keeps timers (interval mining) that would hold the thread: exit once the server is down.
    chain.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error("embedded chain thread: close failed:", err);
        process.exit(1);
      },
    );
  });
  port.postMessage({ type: "ready", chain: info } satisfies ChainThreadMessage);
}

if (!parentPort) throw new Error("src/chain/embeddedWorker.ts runs only as a worker thread (startEmbeddedChainThread)");
// A failed start rejects here: the thread ends with it and its 'error' event carries it to startEmbeddedChainThread.
void main(parentPort);
