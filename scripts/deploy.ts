/**
 * Deploys the OperatorSet (the instances' relayer keys) and SpendPolicyFactory (which deploys the one SpendPolicy implementation every agent clones) and records both in
 * deployments/<network>.json, then prints the verify command of every contract.
 *
 *   DEPLOYER_PRIVATE_KEY=0x... BASE_RPC_URL=https://... OPERATOR_ADDRESS=0x... \
 *     npx hardhat run scripts/deploy.ts --network base          (baseSepolia: BASE_SEPOLIA_RPC_URL)
 *
 * Env: OPERATOR_ADDRESSES (comma-separated: one operator key per service instance, the members of the OperatorSet that
 * is the factory's defaultOperator) or OPERATOR_ADDRESS (one instance); required except on the hardhat network.
 * Add or remove an instance key later with scripts/operators.ts. FACTORY_OWNER (default:
 * the deployer), USDC_ADDRESS (default: Circle's USDC of Base or Base Sepolia), CONFIRMATIONS (default 2; 1 on
 * hardhat). Refuses to overwrite a record made on another chain id. The record also names the network's Uniswap v3
 * contracts (src/chain/addresses.ts), checked on-chain first; none on the hardhat dry run. On the in-process hardhat network it first puts
 * TestUSDC's code at the Base USDC address (a dry run).
 */
import hre from "hardhat";
import { USDC_ADDRESSES } from "../src/chain/addresses";
import { deployFactory, verifyCommands } from "../src/chain/deploy";

async function main(): Promise<void> {
  if (hre.network.name !== "hardhat" && !process.env.DEPLOYER_PRIVATE_KEY) {
    throw new Error(`set DEPLOYER_PRIVATE_KEY (and the network's RPC URL) to deploy to ${hre.network.name}`);
  }
  const confirmations = process.env.CONFIRMATIONS ? Number(process.env.CONFIRMATIONS) : undefined;
  if (confirmations !== undefined && !(Number.isInteger(confirmations) && confirmations >= 1)) {
    throw new Error(`CONFIRMATIONS must be a positive integer, got ${process.env.CONFIRMATIONS}`);
  }
  if (hre.network.name === "hardhat") {
    const testUsdc = await hre.artifacts.readArtifact("TestUSDC");
    await hre.network.provider.request({ method: "hardhat_setCode", params: [USDC_ADDRESSES[8453], testUsdc.deployedBytecode] });
  }
  const record = await deployFactory(hre, {
    operator: process.env.OPERATOR_ADDRESS || undefined,
    operators: process.env.OPERATOR_ADDRESSES ? process.env.OPERATOR_ADDRESSES.split(",").map((a) => a.trim()) : undefined,
    owner: process.env.FACTORY_OWNER || undefined,
    usdc: process.env.USDC_ADDRESS || undefined,
    confirmations,
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify(record, null, 2));
  console.log("\nVerify every contract on the explorer (Etherscan v2 API: ETHERSCAN_API_KEY, one key for all chains) and on Sourcify:");
  for (const line of verifyCommands(record)) console.log(`  ${line}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
