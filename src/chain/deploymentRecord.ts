/**
 * A deployment's record (deployments/<network>.json): what scripts/deploy.ts wrote, read back by scripts/operators.ts,
 * and the explorer verification commands and constructor-argument module made from it.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { UniswapRecord } from "./uniswapRecord";

/** SpendPolicyFactory's constructor arguments: the configurer and the modules' code hashes (its address commits to them). */
export type FactoryArgs = [configurer: string, schemesCodeHash: string, updatesCodeHash: string];

export interface DeploymentRecord {
  network: string;
  chainId: number;
  factory: {
    address: string;
    /** Null when the deterministic deployment found the factory there already (deployed before, same code). */
    txHash: string | null;
    block: number | null;
    deployer: string;
    owner: string;
    /** The OperatorSet below: every instance key in it relays for every agent. */
    defaultOperator: string;
    /** The deployer, who configures it (then hands it to `owner`), and its modules' code hashes. Through the
     * deterministic deployment proxy with `salt`, so the same deployer and salt give the same factory on every network. */
    constructorArgs: FactoryArgs;
    salt: string;
  };
  /** The instances' operator keys (OperatorSet; its owner adds and removes members, each change an event). */
  operatorSet: {
    address: string;
    txHash: string;
    block: number;
    owner: string;
    members: string[];
    constructorArgs: [owner: string, members: string[]];
  };
  /**
   * The one SpendPolicy implementation every agent's clone delegates to (the factory's third creation, by configure),
   * with its swap configuration (SwapRouter02, WETH, Uniswap v3 factory; all zero where the network has no Uniswap)
   * and its two modules (SpendPolicySchemes for `usdc`, SpendPolicyUpdates; the factory's first two, by createModules).
   */
  implementation: {
    address: string;
    constructorArgs: [usdc: string, swap: [router: string, weth: string, uniswapFactory: string], schemes: string, updates: string];
  };
  usdc: string;
  /** Uniswap v3 for swaps before settlement (null where the network has none, e.g. a hardhat dry run). */
  uniswap: UniswapRecord | null;
  abiHash: string;
  deployedAt: string;
}

export class DeploymentChainMismatchError extends Error {
  constructor(
    readonly file: string,
    readonly recordedChainId: number,
    readonly chainId: number,
  ) {
    super(`${file} records chain id ${recordedChainId}, but this network has chain id ${chainId}: refusing to overwrite`);
  }
}

/** The record of `network` in `dir`, if any. */
export function readDeploymentRecord(dir: string, network: string): DeploymentRecord | undefined {
  const file = join(dir, `${network}.json`);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as DeploymentRecord;
}

export function assertSameChain(dir: string, network: string, chainId: number): void {
  // A `hardhat node` (localhost) is a new chain at every start, of whichever network it stands in for: its record is
  // only ever the last run's (npm run staging with another NETWORK, say).
  if (network === "localhost") return;
  const previous = readDeploymentRecord(dir, network);
  if (previous && previous.chainId !== chainId) {
    throw new DeploymentChainMismatchError(join(dir, `${network}.json`), previous.chainId, chainId);
  }
}

/**
 * The commands that verify every contract's source on the explorer (Etherscan's v2 API, one key for all chains) and
 * Sourcify: the factory, and the one SpendPolicy implementation it deployed. Agents are ERC-1167 clones of that
 * implementation, which explorers recognise as proxies of verified code.
 */
export function verifyCommands(record: DeploymentRecord): string[] {
  const [setOwner, members] = record.operatorSet.constructorArgs;
  const args = record.factory.constructorArgs.join(" ");
  const [usdc, , schemes, updates] = record.implementation.constructorArgs;
  // A struct argument does not fit the command line: the implementation's go through --constructor-args (a module).
  return [
    `npx hardhat verify --network ${record.network} --contract contracts/OperatorSet.sol:OperatorSet ${record.operatorSet.address} ${setOwner} '${JSON.stringify(members)}'`,
    `npx hardhat verify --network ${record.network} --contract contracts/SpendPolicyFactory.sol:SpendPolicyFactory ${record.factory.address} ${args}`,
    `npx hardhat verify --network ${record.network} --contract contracts/SpendPolicySchemes.sol:SpendPolicySchemes ${schemes} ${usdc}`,
    `npx hardhat verify --network ${record.network} --contract contracts/SpendPolicyUpdates.sol:SpendPolicyUpdates ${updates}`,
    `npx hardhat verify --network ${record.network} --contract contracts/SpendPolicy.sol:SpendPolicy --constructor-args deployments/${record.network}.implementation-args.js ${record.implementation.address}`,
  ];
}

/** The module `hardhat verify --constructor-args` reads for the implementation. */
export function implementationArgsModule(record: DeploymentRecord): string {
  return `module.exports = ${JSON.stringify(record.implementation.constructorArgs)};
`;
}
