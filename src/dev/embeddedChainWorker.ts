/** The body of the embedded chain's worker thread (startEmbeddedChainThread in embeddedChainThread.ts starts it). */
import { serveFromThread } from "../util/workerThread";
import { startEmbeddedChain } from "./embeddedChain";
import type { ChainThreadInfo, ChainThreadOptions } from "./embeddedChainThread";

serveFromThread(async (opts: ChainThreadOptions) => {
  const chain = await startEmbeddedChain(opts);
  const { rpcUrl, network, chainId, addresses, deployBlock, operator, facilitator, factoryOwner } = chain;
  const info: ChainThreadInfo = { rpcUrl, network, chainId, addresses, deployBlock, operator, facilitator, factoryOwner };
  return { info, close: () => chain.close() };
});
