/**
 * `npm run staging:fund -- <address> [amount]`: mints test USDC (default 25) to an address on the staging chain
 * (127.0.0.1:CHAIN_PORT, default 8545), through TestUSDC's open `mint` sent from the node's first unlocked account.
 * Only a local node: TestUSDC is what `npm run deploy -- --network localhost` placed at the USDC address of the
 * network of the node's chain id (NETWORK of `npm run staging`).
 */
import { Contract, JsonRpcProvider, formatUnits, isAddress } from "ethers";
import { networkOfChainId } from "../../src/chain/networks";
import { toBaseUnits } from "../../src/amounts";

async function main(): Promise<void> {
  const [address, amount = "25"] = process.argv.slice(2);
  if (!address || !isAddress(address)) {
    console.error("Usage: npm run staging:fund -- <address> [amount in USDC, default 25]   (CHAIN_PORT: the staging chain's port)");
    process.exit(64);
  }
  const units = toBaseUnits(amount);
  const provider = new JsonRpcProvider(`http://127.0.0.1:${process.env.CHAIN_PORT || 8545}`);
  try {
    const chainId = Number((await provider.getNetwork()).chainId);
    const at = process.env.USDC_ADDRESS || networkOfChainId(chainId)?.usdc.address;
    if (!at) throw new Error(`chain id ${chainId} is no network of the table: set USDC_ADDRESS`);
    const usdc = new Contract(
      at,
      ["function mint(address to, uint256 amount) returns (bool)", "function balanceOf(address) view returns (uint256)"],
      await provider.getSigner(0),
    );
    const receipt = await (await usdc.mint(address, units)).wait();
    const balance = (await usdc.balanceOf(address)) as bigint;
    console.log(`Minted ${amount} test USDC to ${address} (tx ${receipt?.hash}); balance ${formatUnits(balance, 6)} USDC`);
  } finally {
    provider.destroy();
  }
}

main().catch((err: unknown) => {
  console.error("staging:fund failed:", err instanceof Error ? err.message : err);
  process.exit(1);
});
