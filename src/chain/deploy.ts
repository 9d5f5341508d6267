/**
 * Deploys SpendPolicyFactory to the network Hardhat is connected to and records it in deployments/<network>.json.
 * Used by scripts/deploy.ts (`npx hardhat run scripts/deploy.ts --network base`) and by its test on the in-process
 * network. The embedded chain uses deployFactoryContract only (it records nothing).
 */
import {
  AbiCoder,
  ContractFactory,
  ZeroAddress,
  ZeroHash,
  concat,
  getAddress,
  getCreate2Address,
  isAddress,
  keccak256,
  toUtf8Bytes,
  type Signer,
} from "ethers";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";

import { DETERMINISTIC_DEPLOYER, USDC_ADDRESSES, type UniswapDeployment } from "./addresses";
import { bind } from "./contracts";
import { type DeploymentRecord, type FactoryArgs, assertSameChain, implementationArgsModule } from "./deploymentRecord";
import { uniswapRecord } from "./uniswapRecord";

export interface DeployFactoryOptions {
  /** Factory owner. Default: the deployer. */
  owner?: string;
  /** The service's relayer key, the OperatorSet's first member (see `operators`). */
  operator?: string;
  /** The operator keys of the service instances (each instance relays with its own). Required except on the hardhat
   * network (default: `operator`, else the deployer). */
  operators?: string[];
  /** Default: the first account of the network (DEPLOYER_PRIVATE_KEY on live networks). */
  deployer?: Signer;
  /** Blocks to wait for. Default 1 on hardhat and localhost, 2 elsewhere. */
  confirmations?: number;
  /** The USDC the agents pay with. Default: USDC_ADDRESSES[chainId] (Base, Base Sepolia); required elsewhere. */
  usdc?: string;
  /** Uniswap v3 contracts to record. Default: UNISWAP_ADDRESSES[chainId] (Base, Base Sepolia). */
  uniswap?: UniswapDeployment;
  /** Where records go. Default: <project root>/deployments. */
  deploymentsDir?: string;
  /** The factory's CREATE2 salt (FACTORY_SALT): the same deployer and salt give the same addresses on every network; another salt, another factory. */
  salt?: string;
  log?: (line: string) => void;
}

/** keccak256 of the JSON of the factory and policy ABIs: tells whether a record matches the compiled contracts. */
export async function abiHash(hre: HardhatRuntimeEnvironment): Promise<string> {
  const [factory, policy] = await Promise.all([
    hre.artifacts.readArtifact("SpendPolicyFactory"),
    hre.artifacts.readArtifact("SpendPolicy"),
  ]);
  return keccak256(toUtf8Bytes(JSON.stringify({ SpendPolicyFactory: factory.abi, SpendPolicy: policy.abi })));
}

/** Deploys `initCode` with a plain CREATE and waits for `confirmations`. */
async function deployPlainCode(
  deployer: Signer,
  initCode: string,
  confirmations: number,
): Promise<{ address: string; txHash: string; block: number }> {
  const tx = await deployer.sendTransaction({ data: initCode });
  const receipt = await tx.wait(confirmations);
  if (!receipt?.contractAddress || receipt.status !== 1) throw new Error(`deployment failed (tx ${tx.hash})`);
  return { address: receipt.contractAddress, txHash: tx.hash, block: receipt.blockNumber };
}

/** Deploys a contract of `name` with `args` from `deployer` and waits for `confirmations`; answers its address. */
async function deployPlain(
  hre: HardhatRuntimeEnvironment,
  deployer: Signer,
  name: string,
  args: unknown[],
  confirmations: number,
): Promise<{ address: string; txHash: string; block: number }> {
  const artifact = await hre.artifacts.readArtifact(name);
  const contract = await new ContractFactory(artifact.abi, artifact.bytecode, deployer).deploy(...args);
  const tx = contract.deploymentTransaction();
  if (!tx) throw new Error(`${name} deployment sent no transaction`);
  const receipt = await tx.wait(confirmations);
  if (!receipt || receipt.status !== 1) throw new Error(`${name} deployment failed (tx ${tx.hash})`);
  return { address: await contract.getAddress(), txHash: tx.hash, block: receipt.blockNumber };
}

/** Deploys OperatorSet(owner, members) from `deployer` and waits for `confirmations`. */
export async function deployOperatorSet(
  hre: HardhatRuntimeEnvironment,
  deployer: Signer,
  owner: string,
  members: string[],
  confirmations = 1,
): Promise<{ address: string; txHash: string; block: number }> {
  return deployPlain(hre, deployer, "OperatorSet", [owner, members], confirmations);
}

/** The swap configuration of the implementation: SwapRouter02, WETH, Uniswap v3 factory (all zero: no swaps). */
export type SwapConfig = [router: string, weth: string, uniswapFactory: string];
export const NO_SWAPS: SwapConfig = [ZeroAddress, ZeroAddress, ZeroAddress];

/** The implementation's swap configuration from a Uniswap record (none: swaps off on that deployment). */
export function swapConfigOf(u: { swapRouter02: string; weth: string; factory: string } | null): SwapConfig {
  return u ? [u.swapRouter02, u.weth, u.factory] : NO_SWAPS;
}

/**
 * Deploys `initCode` through the deterministic deployment proxy with `salt` (CREATE2: the same address on every
 * network for the same code and salt) and waits for `confirmations`. Where that address holds code already (the same
 * init code, deployed before on this network), nothing is sent. On the in-process Hardhat network the proxy is placed
 * first when missing.
 */
export async function deployDeterministic(
  hre: HardhatRuntimeEnvironment,
  deployer: Signer,
  initCode: string,
  salt: string,
  confirmations = 1,
): Promise<{ address: string; txHash: string | null; block: number | null }> {
  const provider = hre.ethers.provider;
  const proxy = getAddress(DETERMINISTIC_DEPLOYER.address);
  if ((await provider.getCode(proxy)) === "0x") {
    // A Hardhat node (in process, or `hardhat node` as localhost) starts without it; every public network has it.
    if (!LOCAL_NETWORKS.includes(hre.network.name)) throw new Error(`no deterministic deployment proxy at ${proxy} on ${hre.network.name}`);
    await provider.send("hardhat_setCode", [proxy, DETERMINISTIC_DEPLOYER.runtimeCode]);
  }
  const address = getCreate2Address(proxy, salt, keccak256(initCode));
  if ((await provider.getCode(address)) !== "0x") return { address, txHash: null, block: null };
  const tx = await deployer.sendTransaction({ to: proxy, data: concat([salt, initCode]) });
  const receipt = await tx.wait(confirmations);
  if (!receipt || receipt.status !== 1 || (await provider.getCode(address)) === "0x") {
    throw new Error(`deterministic deployment to ${address} failed (tx ${tx.hash})`);
  }
  return { address, txHash: tx.hash, block: receipt.blockNumber };
}

/**
 * Gas limits of SpendPolicyFactory.createModules (about 8M: two modules' code) and configure (about 5.9M with swaps,
 * 5.0M without). Hardhat's estimate of nested creations is about three times the use, past the 16.8M cap of a
 * transaction.
 */
const CREATE_MODULES_GAS = 12_000_000n;
const CONFIGURE_GAS = 10_000_000n;

/** The salt of the factory's deterministic deployment: one factory per deployer (and compiled modules). */
export const FACTORY_SALT = ZeroHash;

/** Hardhat's own networks: the deployment proxy is placed there with hardhat_setCode. */
const LOCAL_NETWORKS = ["hardhat", "localhost"];

/** SpendPolicyFactory's constructor arguments: the configurer and the modules' code hashes (its address commits to them). */
export async function factoryArgs(hre: HardhatRuntimeEnvironment, configurer: string): Promise<FactoryArgs> {
  const [schemes, updates] = await Promise.all(
    ["SpendPolicySchemes", "SpendPolicyUpdates"].map((name) => hre.artifacts.readArtifact(name)),
  );
  return [configurer, keccak256(schemes.bytecode), keccak256(updates.bytecode)];
}

/**
 * Deploys SpendPolicyFactory(deployer, the modules' code hashes), has it create the wallet's modules
 * (SpendPolicySchemes for `usdc`, SpendPolicyUpdates) and configure its implementation (with `swap`; `operator` as
 * default operator), then hands it to `owner` when that is another account. With `salt` the factory goes through the
 * deterministic deployment proxy: the same deployer and salt give the same factory, module, implementation and agent
 * addresses on every network. Without it (tests that need several factories on one chain), a plain deployment. A
 * deployment cut short between its steps is taken up where it stopped.
 */
export async function deployFactoryContract(
  hre: HardhatRuntimeEnvironment,
  deployer: Signer,
  owner: string,
  operator: string,
  usdc: string,
  confirmations = 1,
  swap: SwapConfig = NO_SWAPS,
  salt?: string,
): Promise<{
  address: string;
  txHash: string | null;
  block: number | null;
  implementation: string;
  schemes: string;
  updates: string;
  constructorArgs: FactoryArgs;
}> {
  const configurer = getAddress(await deployer.getAddress());
  const args = await factoryArgs(hre, configurer);
  const { bytecode } = await hre.artifacts.readArtifact("SpendPolicyFactory");
  const initCode = concat([bytecode, AbiCoder.defaultAbiCoder().encode(["address", "bytes32", "bytes32"], args)]);
  const deployed =
    salt === undefined
      ? await deployPlainCode(deployer, initCode, confirmations)
      : await deployDeterministic(hre, deployer, initCode, salt, confirmations);
  const factory = bind("SpendPolicyFactory", deployed.address, deployer);
  if ((await factory.implementation()) !== ZeroAddress) {
    throw new Error(
      `SpendPolicyFactory at ${deployed.address} is configured already (deployed before with this salt): pass another salt (FACTORY_SALT) for another factory`,
    );
  }
  const code = async (name: string) => (await hre.artifacts.readArtifact(name)).bytecode;
  let [schemes, updates, madeFor] = (await factory.modules()) as [string, string, string];
  if (schemes === ZeroAddress) {
    const modules = factory.createModules(await code("SpendPolicySchemes"), await code("SpendPolicyUpdates"), usdc, {
      gasLimit: CREATE_MODULES_GAS,
    });
    await (await modules).wait(confirmations);
    [schemes, updates, madeFor] = await factory.modules();
  }
  if (getAddress(madeFor) !== getAddress(usdc)) {
    throw new Error(`SpendPolicyFactory at ${deployed.address} has its modules made for USDC ${madeFor}, not ${usdc}: pass another salt`);
  }
  await (await factory.configure(await code("SpendPolicy"), operator, ...swap, { gasLimit: CONFIGURE_GAS })).wait(confirmations);
  if (getAddress(owner) !== configurer) await (await factory.transferOwnership(owner)).wait(confirmations);
  return { ...deployed, implementation: await factory.implementation(), schemes, updates, constructorArgs: args };
}

/**
 * Deploys the OperatorSet of the instances' keys and the factory (the set is its defaultOperator), checks it, writes deployments/<network>.json and returns the record.
 * Refuses (before sending anything) when an existing record of that name was made on another chain id.
 */
export async function deployFactory(hre: HardhatRuntimeEnvironment, opts: DeployFactoryOptions = {}): Promise<DeploymentRecord> {
  const log = opts.log ?? (() => undefined);
  const network = hre.network.name;
  const dir = opts.deploymentsDir ?? join(hre.config.paths.root, "deployments");
  // Arguments first, so a mistake costs no RPC call.
  if (opts.operator === undefined && !opts.operators?.length && network !== "hardhat") {
    throw new Error(`operator (OPERATOR_ADDRESS or OPERATOR_ADDRESSES) is required on network ${network}`);
  }
  if (opts.operator !== undefined) checkedAddress("operator (OPERATOR_ADDRESS)", opts.operator);
  for (const o of opts.operators ?? []) checkedAddress("operator (OPERATOR_ADDRESSES)", o);
  if (new Set((opts.operators ?? []).map((o) => o.toLowerCase())).size !== (opts.operators ?? []).length) {
    throw new Error("operators (OPERATOR_ADDRESSES) must not repeat an address");
  }
  if (opts.owner !== undefined) checkedAddress("owner (FACTORY_OWNER)", opts.owner);

  const chainId = Number(await hre.network.provider.request({ method: "eth_chainId" }));
  assertSameChain(dir, network, chainId);

  const deployer = opts.deployer ?? (await defaultDeployer(hre));
  const deployerAddress = getAddress(await deployer.getAddress());
  const members = opts.operators?.length
    ? opts.operators.map((o) => checkedAddress("operator (OPERATOR_ADDRESSES)", o))
    : [checkedAddress("operator (OPERATOR_ADDRESS)", opts.operator ?? deployerAddress)];
  const owner = checkedAddress("owner (FACTORY_OWNER)", opts.owner ?? deployerAddress);
  // The owner adds and removes members and repoints the factory: an instance's key (on a server) must not hold that.
  if ((opts.operator !== undefined || opts.operators?.length) && members.includes(owner)) {
    throw new Error(`operator ${owner} must not be the owner (FACTORY_OWNER, default: the deployer) of the OperatorSet and the factory`);
  }
  // A local node mines only when sent something: a second confirmation would never come.
  const confirmations = opts.confirmations ?? (network === "hardhat" || network === "localhost" ? 1 : 2);
  const usdcAddress = opts.usdc ?? USDC_ADDRESSES[chainId];
  if (!usdcAddress) throw new Error(`no USDC address known for chain id ${chainId}: pass usdc (USDC_ADDRESS)`);
  const usdc = checkedAddress("usdc (USDC_ADDRESS)", usdcAddress);
  if ((await hre.ethers.provider.getCode(usdc)) === "0x") throw new Error(`no contract at USDC address ${usdc} on ${network}`);
  const uniswap = await uniswapRecord({ provider: hre.ethers.provider, chainId, network, usdc, uniswap: opts.uniswap });

  log(`Deploying SpendPolicyFactory to ${network} (chain id ${chainId}) from ${deployerAddress}`);
  log(`  owner ${owner}, operators ${members.join(", ")}, usdc ${usdc}; waiting for ${confirmations} confirmation(s)`);
  const set = await deployOperatorSet(hre, deployer, owner, members, confirmations);
  const operator = getAddress(set.address);
  log(`OperatorSet at ${operator} (block ${set.block}, tx ${set.txHash})`);
  const swap = swapConfigOf(uniswap);
  const salt = opts.salt ?? FACTORY_SALT;
  const deployed = await deployFactoryContract(hre, deployer, owner, operator, usdc, confirmations, swap, salt);

  const onChainOperator = await bind("SpendPolicyFactory", deployed.address, deployer).defaultOperator();
  if (getAddress(onChainOperator) !== operator) {
    throw new Error(`factory ${deployed.address} reports defaultOperator ${onChainOperator}, expected ${operator}`);
  }

  const record: DeploymentRecord = {
    network,
    chainId,
    factory: {
      address: deployed.address,
      txHash: deployed.txHash,
      block: deployed.block,
      deployer: deployerAddress,
      owner,
      defaultOperator: operator,
      constructorArgs: deployed.constructorArgs,
      salt,
    },
    implementation: {
      address: getAddress(deployed.implementation),
      constructorArgs: [usdc, swap, getAddress(deployed.schemes), getAddress(deployed.updates)],
    },
    operatorSet: { address: operator, txHash: set.txHash, block: set.block, owner, members, constructorArgs: [owner, members] },
    usdc,
    uniswap,
    abiHash: await abiHash(hre),
    deployedAt: new Date().toISOString(),
  };
  // Checked again: a record may have appeared while we waited for confirmations.
  assertSameChain(dir, network, chainId);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${network}.json`);
  writeFileSync(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
  writeFileSync(join(dir, `${network}.implementation-args.js`), implementationArgsModule(record));
  log(
    `SpendPolicyFactory at ${deployed.address} (${deployed.txHash ? `block ${deployed.block}, tx ${deployed.txHash}` : "deployed before"}); wrote ${file}`,
  );
  log(`SpendPolicy implementation at ${record.implementation.address}`);
  log(
    uniswap
      ? `Uniswap v3: SwapRouter02 ${uniswap.swapRouter02}, QuoterV2 ${uniswap.quoterV2}, USDC/WETH pool ${uniswap.usdcWethPool ?? "none"}`
      : "Uniswap v3: none on this network",
  );
  return record;
}

async function defaultDeployer(hre: HardhatRuntimeEnvironment): Promise<Signer> {
  const signers = await hre.ethers.getSigners();
  if (signers.length === 0) {
    throw new Error(`no deployer account on network ${hre.network.name}: set DEPLOYER_PRIVATE_KEY`);
  }
  return signers[0];
}

function checkedAddress(what: string, value: string): string {
  if (!isAddress(value)) throw new Error(`${what} is not an address: ${String(value)}`);
  const address = getAddress(value);
  if (address === "0x0000000000000000000000000000000000000000") throw new Error(`${what} must not be the zero address`);
  return address;
}
