/** The body of the embedded chain's worker thread (startEmbeddedChainThread in embeddedThread.ts starts it). */
import { serveFromThread } from "../util/workerThread";
import { startEmbeddedChain } from "./embedded";
import type { ChainThreadInfo, ChainThreadOptions } from "./embeddedThread";

serveFromThread(async (opts: ChainThreadOptions) => {
  const chain = await startEmbeddedChain(opts);
  const { rpcUrl, chainId, addresses, deployBlock, operator, facilitator, factoryOwner } = chain;
  const info: ChainThreadInfo = { rpcUrl, chainId, addresses, deployBlock, operator, facilitator, factoryOwner };
  return { info, close: () => chain.close() };
});
