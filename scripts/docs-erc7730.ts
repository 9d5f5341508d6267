/**
 * npm run docs:config (this part): writes one ERC-7730 descriptor per network of the table (src/chain/networks.ts),
 * erc7730/eip712-spendgate-policy-<network>.json. Each binds the policy domain on that network's chain id and reads
 * USDC amounts in that network's USDC; the types and display formats they share are in
 * erc7730/common-spendgate-policy.json (ERC-7730 `includes`). test/docs/erc7730.test.ts fails while they differ.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NETWORKS } from "../src/chain/networks";
import { DOMAIN_NAME, DOMAIN_VERSION } from "../src/chain/typedData";
import { PROJECT_ROOT } from "../src/paths";

export const ERC7730_DIR = join(PROJECT_ROOT, "erc7730");
export const COMMON_FILE = "common-spendgate-policy.json";

/** Each network's descriptor: its file name in erc7730/ and its text. */
export function networkDescriptors(): { file: string; text: string }[] {
  const common = JSON.parse(readFileSync(join(ERC7730_DIR, COMMON_FILE), "utf8")) as { $schema: string; metadata: { owner: string } };
  return Object.values(NETWORKS).map((n) => ({
    file: `eip712-spendgate-policy-${n.name}.json`,
    text:
      JSON.stringify(
        {
          $schema: common.$schema,
          includes: COMMON_FILE,
          context: {
            $id: `SpendGate agent wallet (policy domain) on ${n.displayName}`,
            eip712: { domain: { name: DOMAIN_NAME, version: DOMAIN_VERSION, chainId: n.chainId } },
          },
          metadata: { owner: common.metadata.owner, constants: { usdc: n.usdc.address } },
        },
        null,
        2,
      ) + "\n",
  }));
}

if (require.main === module) {
  for (const { file, text } of networkDescriptors()) writeFileSync(join(ERC7730_DIR, file), text);
  console.log(`erc7730/: ${Object.keys(NETWORKS).length} network descriptors written`);
}
