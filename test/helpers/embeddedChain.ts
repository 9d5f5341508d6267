/** One embedded chain (Hardhat's in-process network with the contracts and Uniswap deployed) per test file. */
import hre from "hardhat";
import { startEmbeddedChain, type EmbeddedChainWithSwaps } from "../../src/dev/embeddedChain";
import { startedInBefore } from "./stack";
import { revertKeepingClock } from "./swapFixture";

/**
 * Starts the chain before the file's tests and, after them, puts Hardhat's network back as the file found it (later
 * test files share its default accounts; with `keepClock`, without moving its clock back), then closes the chain.
 * The value stands for the chain once it has started.
 */
export function embeddedChainPerFile(opts: { keepClock?: boolean } = {}): EmbeddedChainWithSwaps {
  let started: EmbeddedChainWithSwaps | undefined;
  let clean: string | undefined;
  before(async function () {
    started = await startEmbeddedChain();
    clean = (await hre.network.provider.request({ method: "evm_snapshot", params: [] })) as string;
  });
  after(async function () {
    if (clean) {
      if (opts.keepClock) await revertKeepingClock(clean);
      else await hre.network.provider.request({ method: "evm_revert", params: [clean] });
    }
    await started?.close();
  });
  return startedInBefore(() => started, "embeddedChainPerFile: chain");
}
