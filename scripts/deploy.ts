/**
 * Deploys the OperatorSet (the instances' relayer keys) and SpendPolicyFactory (which deploys the one SpendPolicy implementation every agent clones) and records both in
 * deployments/<network>.json, then prints the verify command of every contract.
 *
 *   DEPLOYER_PRIVATE_KEY=0x... BASE_RPC_URL=https://... OPERATOR_ADDRESS=0x... \
 *     npx hardhat run scripts/deploy.ts --network base
 *
 * Every network of the table (src/chain/networks.ts) is a Hardhat network of its name, on `<NAME>_RPC_URL` (default its
 * public RPC): `--network base-sepolia` with BASE_SEPOLIA_RPC_URL writes deployments/base-sepolia.json, which the
 * service reads for NETWORK=base-sepolia (and for that network of NETWORKS).
 *
 * Env: OPERATOR_ADDRESSES (comma-separated: one operator key per service instance, the members of the OperatorSet that
 * is the factory's defaultOperator) or OPERATOR_ADDRESS (one instance); required except on the hardhat network.
 * Add or remove an instance key later with scripts/operators.ts. FACTORY_OWNER (default:
 * the deployer), USDC_ADDRESS (default: Circle's USDC of the network, from the table), CONFIRMATIONS (default 2; 1 on
 * hardhat). Refuses to overwrite a record made on another chain id. The record also names the network's Uniswap v3
 * contracts (the network table's), checked on-chain first; none on the hardhat dry run. On the in-process hardhat network it
 * first puts TestUSDC's code at the USDC address of the network whose chain id it has (a dry run; NETWORK picks it, default
 * base). On `--network localhost` (a local node on CHAIN_PORT, default 8545, such as `npx hardhat node`; what `npm run
 * staging` starts, with NETWORK's chain id) it deploys from the node's first unlocked account unless DEPLOYER_PRIVATE_KEY
 * is set, puts TestUSDC at that network's USDC address (answering its EIP-712 name and version) and Multicall3 at its
 * canonical address when they hold no code there (hardhat_setCode), and records no Uniswap unless the network's
 * addresses hold code (swaps off).
 */
import hre from "hardhat";
import { MULTICALL3_ADDRESS } from "../src/chain/addresses";
import { networkOfChainId } from "../src/chain/networks";
import { bind } from "../src/chain/contracts";
import { deployFactory } from "../src/chain/deploy";
import { verifyCommands } from "../src/chain/deploymentRecord";

async function main(): Promise<void> {
  const local = hre.network.name === "hardhat" || hre.network.name === "localhost";
  if (!local && !process.env.DEPLOYER_PRIVATE_KEY) {
    throw new Error(`set DEPLOYER_PRIVATE_KEY (and the network's RPC URL) to deploy to ${hre.network.name}`);
  }
  const confirmations = process.env.CONFIRMATIONS ? Number(process.env.CONFIRMATIONS) : undefined;
  if (confirmations !== undefined && !(Number.isInteger(confirmations) && confirmations >= 1)) {
    throw new Error(`CONFIRMATIONS must be a positive integer, got ${process.env.CONFIRMATIONS}`);
  }
  if (local) await placeTestContracts();
  const record = await deployFactory(hre, {
    operator: process.env.OPERATOR_ADDRESS || undefined,
    operators: process.env.OPERATOR_ADDRESSES ? process.env.OPERATOR_ADDRESSES.split(",").map((a) => a.trim()) : undefined,
    owner: process.env.FACTORY_OWNER || undefined,
    salt: process.env.FACTORY_SALT || undefined,
    usdc: process.env.USDC_ADDRESS || undefined,
    confirmations,
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify(record, null, 2));
  if (local) return;
  console.log("\nVerify every contract on the explorer (Etherscan v2 API: ETHERSCAN_API_KEY, one key for all chains) and on Sourcify:");
  for (const line of verifyCommands(record)) console.log(`  ${line}`);
}

/**
 * A dry run or a local node: TestUSDC at the USDC address of the network of the node's chain id (answering that
 * network's EIP-712 name and version) and Multicall3 at its canonical address, where nothing is yet (a second deploy
 * to the same node keeps the balances). Never on a live network.
 */
async function placeTestContracts(): Promise<void> {
  const chainId = Number(await hre.network.provider.request({ method: "eth_chainId" }));
  const network = networkOfChainId(chainId);
  const usdc = process.env.USDC_ADDRESS || network?.usdc.address;
  for (const [name, address] of [
    ["TestUSDC", usdc],
    ["Multicall3", MULTICALL3_ADDRESS],
  ] as const) {
    if (!address || (await hre.ethers.provider.getCode(address)) !== "0x") continue;
    const artifact = await hre.artifacts.readArtifact(name);
    try {
      await hre.network.provider.request({ method: "hardhat_setCode", params: [address, artifact.deployedBytecode] });
    } catch (err) {
      throw new Error(
        `no contract at ${address} on ${hre.network.name}, and the node refused hardhat_setCode to place ${name} there: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    if (name === "TestUSDC" && network) {
      const [signer] = await hre.ethers.getSigners();
      await (await bind("Usdc", address, signer).setEip712Domain(network.usdc.name, network.usdc.version)).wait();
    }
    if (hre.network.name !== "hardhat") console.log(`Placed ${name} (test code) at ${address} on ${hre.network.name}`);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
