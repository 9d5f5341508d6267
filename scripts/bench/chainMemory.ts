/**
 * What the embedded chain's history costs in memory: mines CHAIN_MEMORY_BLOCKS (3,000) blocks of one USDC mint each
 * on the in-process Hardhat network and prints the process's RSS and the JS heap (after a GC) every 500 blocks, and the
 * cost per block. Hardhat (EDR) keeps every block, receipt and state change in memory for good, and has no option to
 * prune them: the figure is what `npm start` grows by per block (a payment mines 2: its authorisation and its
 * settlement). `node --expose-gc --import tsx scripts/bench/chainMemory.ts` (after `npx hardhat compile`).
 */
import { Interface, Wallet } from "ethers";
import { startEmbeddedChain } from "../../src/dev/embeddedChain";

const BLOCKS = Number(process.env.CHAIN_MEMORY_BLOCKS ?? 3_000);
const mib = (n: number) => n / 1024 / 1024;

async function main(): Promise<void> {
  const chain = await startEmbeddedChain();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const provider = (require("hardhat") as typeof import("hardhat")).network.provider;
  const [from] = (await provider.request({ method: "eth_accounts" })) as string[];
  const usdc = new Interface(["function mint(address to, uint256 amount)"]);
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
  const sample = () => {
    gc();
    const m = process.memoryUsage();
    return { rss: mib(m.rss), heap: mib(m.heapUsed), external: mib(m.external + m.arrayBuffers) };
  };
  const first = sample();
  console.log(`start: rss ${first.rss.toFixed(0)} MiB, heap ${first.heap.toFixed(0)} MiB`);
  const t0 = Date.now();
  for (let i = 1; i <= BLOCKS; i++) {
    const data = usdc.encodeFunctionData("mint", [Wallet.createRandom().address, 1_000_000n]);
    await provider.request({ method: "eth_sendTransaction", params: [{ from, to: chain.addresses.usdc, data }] });
    if (i % 500 === 0) {
      const s = sample();
      console.log(
        `${i} blocks (${((Date.now() - t0) / 1000).toFixed(0)} s): rss ${s.rss.toFixed(0)} MiB (+${(((s.rss - first.rss) * 1024) / i).toFixed(1)} KiB/block), heap ${s.heap.toFixed(0)} MiB (+${(((s.heap - first.heap) * 1024) / i).toFixed(1)} KiB/block)`,
      );
    }
  }
  await chain.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
