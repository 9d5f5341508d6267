/** The chain modes the benchmarks compare, on the embedded chain's JSON-RPC. */
import type { JsonRpcProvider } from "ethers";

/** 0: automine (a block per transaction); otherwise a block every `intervalMs` (as Base's 2 s blocks or flashblocks). */
export async function setBlockInterval(provider: JsonRpcProvider, intervalMs: number): Promise<void> {
  if (intervalMs) {
    await provider.send("evm_setAutomine", [false]);
    await provider.send("evm_setIntervalMining", [intervalMs]);
  } else {
    await provider.send("evm_setIntervalMining", [0]);
    await provider.send("evm_setAutomine", [true]);
  }
}
