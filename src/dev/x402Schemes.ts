/**
 * The x402 scheme contracts of the sandbox: this project's own implementations (contracts/test/x402/) of Permit2's
 * signature transfers, the x402 `upto` Permit2 proxy, the `batch-settlement` channel contract and its two deposit
 * collectors, placed with `hardhat_setCode` at the canonical addresses the stock `@x402/evm` packages call, as TestUSDC
 * sits at Base's USDC address. They stand in for the deployed originals on Base for the embedded chain and tests only:
 * nothing here ever deploys to a real network (production reads the real contracts at the same addresses).
 *
 * The contracts hold no constructor state (constants, domain separators computed per call), so their runtime code
 * alone works where it is placed. Needs compiled artifacts (`npx hardhat compile`).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../paths";

/**
 * Where each scheme contract sits (the same on Base and on the embedded chain): the constants of @x402/evm 2.27
 * (its index exports all but the Permit2 collector's), written out so the chain's thread need not load the package;
 * test/contracts/x402Schemes.batch.test.ts checks them against the installed package.
 */
export const X402_SCHEME_ADDRESSES = {
  permit2: "0x000000000022D473030F116dDEE9F6B43aC78BA3",
  uptoPermit2Proxy: "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002",
  batchSettlement: "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003",
  erc3009DepositCollector: "0x4020806089470a89826cB9fB1f4059150b550004",
  permit2DepositCollector: "0x4020425FAf3B746C082C2f942b4E5159887B0005",
} as const;

export type X402SchemeAddresses = typeof X402_SCHEME_ADDRESSES;

/** Artifact (contracts/test/x402/<name>.sol) placed at each address. */
const PLACEMENTS: ReadonlyArray<readonly [keyof X402SchemeAddresses, string]> = [
  ["permit2", "Permit2"],
  ["uptoPermit2Proxy", "X402UptoPermit2Proxy"],
  ["batchSettlement", "X402BatchSettlement"],
  ["erc3009DepositCollector", "ERC3009DepositCollector"],
  ["permit2DepositCollector", "Permit2DepositCollector"],
];

interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

function runtimeCode(name: string): string {
  const path = join(PROJECT_ROOT, "artifacts", "contracts", "test", "x402", `${name}.sol`, `${name}.json`);
  let artifact: { deployedBytecode?: string; deployedLinkReferences?: object };
  try {
    artifact = JSON.parse(readFileSync(path, "utf8")) as typeof artifact;
  } catch (err) {
    throw new Error(`artifact ${name} not found: run \`npx hardhat compile\` first (${(err as Error).message})`);
  }
  if (!artifact.deployedBytecode || artifact.deployedBytecode === "0x") throw new Error(`${name} has no runtime code`);
  if (Object.keys(artifact.deployedLinkReferences ?? {}).length > 0) throw new Error(`${name} needs linked libraries`);
  return artifact.deployedBytecode;
}

/**
 * Places the scheme contracts at their canonical addresses on a Hardhat chain (`hardhat_setCode`). Refuses any chain
 * that does not answer `hardhat_setCode`, so it cannot reach a real network.
 */
export async function placeX402SchemeContracts(provider: Eip1193): Promise<X402SchemeAddresses> {
  for (const [key, name] of PLACEMENTS) {
    await provider.request({ method: "hardhat_setCode", params: [X402_SCHEME_ADDRESSES[key], runtimeCode(name)] });
  }
  return X402_SCHEME_ADDRESSES;
}
