/**
 * Starts the embedded chain on its own and keeps it up until Ctrl-C: Hardhat's network with the chain id of NETWORK
 * (default base, 8453), TestUSDC at that network's USDC address, Multicall3, Uniswap v3 where the network has it (WETH,
 * SwapRouter02, QuoterV2, a USDC/WETH pool) and a SpendPolicyFactory. Prints the RPC URL, chain id and addresses
 * (never keys).
 * `npx tsx scripts/chain.ts [--port N] [--operators 0xA,0xB] [--json]` (after `npx hardhat compile`).
 * --operators: more instance keys (funded); with them, an OperatorSet of the chain's operator and these is the factory's
 * default operator. --json: one more line, `CHAIN {...}`, for the cluster script to read. CHAIN_RPC_STATS=1: counts the
 * calls it serves by method (scripts/bench/nodeStats.ts).
 */
import { DEFAULT_NETWORK, isNetworkName } from "../src/chain/networks";
import { startEmbeddedChain } from "../src/dev/embeddedChain";
import { exitOnSignal } from "./exitOnSignal";
import { countCalls } from "./bench/nodeStats";

async function main(): Promise<void> {
  const i = process.argv.indexOf("--port");
  const port = i > 0 ? Number(process.argv[i + 1]) : Number(process.env.CHAIN_PORT ?? 8545);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad port: ${process.argv[i + 1]}`);
  const t0 = performance.now();
  const o = process.argv.indexOf("--operators");
  const operators = o > 0 ? process.argv[o + 1].split(",").filter(Boolean) : undefined;
  const network = process.env.NETWORK ?? DEFAULT_NETWORK;
  if (!isNetworkName(network)) throw new Error(`NETWORK=${network} is not a network of the table`);
  const chain = await startEmbeddedChain({ network, port, operators });
  if (process.env.CHAIN_RPC_STATS === "1") {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    countCalls((require("hardhat") as typeof import("hardhat")).network.provider);
  }
  console.log(`Embedded chain (sandbox: nothing persists) up in ${Math.round(performance.now() - t0)} ms`);
  console.log(`  JSON-RPC:     ${chain.rpcUrl}`);
  console.log(`  network:      ${chain.network} (chain id ${chain.chainId})`);
  console.log(`  USDC (test):  ${chain.addresses.usdc}`);
  console.log(`  Multicall3:   ${chain.addresses.multicall3}`);
  console.log(`  factory:      ${chain.addresses.factory} (block ${chain.deployBlock})`);
  const u = chain.addresses.uniswap;
  if (u) {
    console.log(`  WETH:         ${u.weth}`);
    console.log(`  Uniswap v3:   factory ${u.factory}, SwapRouter02 ${u.swapRouter02}, QuoterV2 ${u.quoterV2}`);
    console.log(`  USDC/WETH:    ${u.usdcWethPool} (0.05%)`);
  } else console.log("  Uniswap v3:   none on this network (swaps off)");
  console.log(`  operator:     ${chain.operator.address}`);
  console.log(`  facilitator:  ${chain.facilitator.address}`);
  if (chain.addresses.operatorSet) console.log(`  operator set: ${chain.addresses.operatorSet}`);
  if (process.argv.includes("--json")) {
    console.log(
      `CHAIN ${JSON.stringify({ rpcUrl: chain.rpcUrl, chainId: chain.chainId, addresses: chain.addresses, deployBlock: chain.deployBlock })}`,
    );
  }
  console.log("Ctrl-C to stop.");
  exitOnSignal(() => chain.close());
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
