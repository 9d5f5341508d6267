/**
 * Adds or removes a service instance's operator key in the deployment's OperatorSet (deployments/<network>.json), as
 * its owner (FACTORY_OWNER at deploy time). A removed key is refused by every agent from the next block on.
 *
 *   DEPLOYER_PRIVATE_KEY=0x... BASE_RPC_URL=https://... OPERATOR_ADD=0x... npx hardhat run scripts/operators.ts --network base
 *   (or OPERATOR_REMOVE=0x...; with neither, it lists nothing and prints whether OPERATOR_CHECK=0x... is a member)
 */
import hre from "hardhat";
import { getAddress, isAddress } from "ethers";
import { join } from "node:path";
import { readDeploymentRecord } from "../src/chain/deploymentRecord";

async function main(): Promise<void> {
  const record = readDeploymentRecord(join(hre.config.paths.root, "deployments"), hre.network.name);
  if (!record?.operatorSet) throw new Error(`deployments/${hre.network.name}.json has no operatorSet: deploy with scripts/deploy.ts first`);
  const [signer] = await hre.ethers.getSigners();
  if (!signer) throw new Error("set DEPLOYER_PRIVATE_KEY (the OperatorSet's owner)");
  const set = await hre.ethers.getContractAt("OperatorSet", record.operatorSet.address, signer);
  const { OPERATOR_ADD: add, OPERATOR_REMOVE: remove, OPERATOR_CHECK: check } = process.env;
  for (const [name, value] of Object.entries({ OPERATOR_ADD: add, OPERATOR_REMOVE: remove, OPERATOR_CHECK: check })) {
    if (value && !isAddress(value)) throw new Error(`${name} is not an address: ${String(value)}`);
  }
  if (add) {
    const tx = await set.addOperator(getAddress(add));
    console.log(`addOperator(${getAddress(add)}): ${tx.hash}`);
    await tx.wait();
  }
  if (remove) {
    const tx = await set.removeOperator(getAddress(remove));
    console.log(`removeOperator(${getAddress(remove)}): ${tx.hash}`);
    await tx.wait();
  }
  for (const a of [add, remove, check].filter((v): v is string => !!v)) {
    console.log(`${getAddress(a)} is ${(await set.isOperator(a)) ? "" : "not "}an operator of ${record.operatorSet.address}`);
  }
  console.log(`${await set.operatorCount()} operator key(s) in the set`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
