/**
 * Deploys SpendPolicyFactory and records it in deployments/<network>.json.
 *
 *   DEPLOYER_PRIVATE_KEY=0x... BASE_RPC_URL=https://... OPERATOR_ADDRESS=0x... \
 *     npx hardhat run scripts/deploy.ts --network base          (baseSepolia: BASE_SEPOLIA_RPC_URL)
 *
 * Env: OPERATOR_ADDRESS (the service's relayer; required except on the hardhat network), FACTORY_OWNER (default:
 * the deployer), CONFIRMATIONS (default 2; 1 on hardhat). Refuses to overwrite a record made on another chain id.
 */
import hre from "hardhat";
import { deployFactory, verifyCommand } from "../src/chain/deploy";

async function main(): Promise<void> {
  if (hre.network.name !== "hardhat" && !process.env.DEPLOYER_PRIVATE_KEY) {
    throw new Error(`set DEPLOYER_PRIVATE_KEY (and the network's RPC URL) to deploy to ${hre.network.name}`);
  }
  const confirmations = process.env.CONFIRMATIONS ? Number(process.env.CONFIRMATIONS) : undefined;
  if (confirmations !== undefined && !(Number.isInteger(confirmations) && confirmations >= 1)) {
    throw new Error(`CONFIRMATIONS must be a positive integer, got ${process.env.CONFIRMATIONS}`);
  }
  const record = await deployFactory(hre, {
    operator: process.env.OPERATOR_ADDRESS || undefined,
    owner: process.env.FACTORY_OWNER || undefined,
    confirmations,
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify(record, null, 2));
  if (record.network !== "hardhat" && record.network !== "localhost") {
    console.log("\nVerify the source on Basescan (needs BASESCAN_API_KEY):");
    console.log(`  ${verifyCommand(record)}`);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
