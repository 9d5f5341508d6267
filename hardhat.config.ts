import { subtask } from "hardhat/config";
import { TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD } from "hardhat/builtin-tasks/task-names";
import type { HardhatUserConfig } from "hardhat/config";
import "@nomicfoundation/hardhat-toolbox";
import { DEFAULT_NETWORK, NETWORKS, NETWORK_LIST, isNetworkName, rpcUrlKey } from "./src/chain/networks";

// The compiler comes from the npm `solc` package (solc-js): Hardhat's own download fails offline.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const SOLC_VERSION: string = require("solc/package.json").version;

subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args: { solcVersion: string }, _hre, runSuper) => {
  if (args.solcVersion !== SOLC_VERSION) return runSuper(args);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const longVersion: string = require("solc")
    .version()
    .replace(/\.Emscripten\.clang$/, "");
  return { compilerPath: require.resolve("solc/soljson.js"), isSolcJs: true, version: SOLC_VERSION, longVersion };
});

const accounts = process.env.DEPLOYER_PRIVATE_KEY ? [process.env.DEPLOYER_PRIVATE_KEY] : [];
// The in-process network (tests, the embedded chain) and a local node (`npm run staging`) take the chain id of NETWORK
// (or of the first of NETWORKS): a sandbox of that network. The embedded chain sets it again at each start.
const sandbox = (process.env.NETWORKS?.split(",")[0] ?? process.env.NETWORK ?? DEFAULT_NETWORK).trim();
const sandboxChainId = isNetworkName(sandbox) ? NETWORKS[sandbox].chainId : NETWORKS[DEFAULT_NETWORK].chainId;

const config: HardhatUserConfig = {
  solidity: {
    version: SOLC_VERSION,
    settings: { optimizer: { enabled: true, runs: 10_000 }, evmVersion: "cancun", viaIR: false },
  },
  networks: {
    hardhat: {
      chainId: sandboxChainId,
      // Payments of many agents in one test run: keep blocks free of the default limit.
      blockGasLimit: 60_000_000,
      initialBaseFeePerGas: 0,
      // Automine gives every block at least the previous timestamp + 1 s: under bursts the chain ran ahead of the
      // wall clock (an hour after 3,500 blocks) and EIP-3009 validity windows failed. Blocks may share a second.
      allowBlocksWithSameTimestamp: true,
    },
    // A local node (`npx hardhat node --port $CHAIN_PORT`, what `npm run staging` starts; compose.yaml's `chain`
    // profile names it with LOCALHOST_RPC_URL): its unlocked accounts deploy.
    localhost: { url: process.env.LOCALHOST_RPC_URL || `http://127.0.0.1:${process.env.CHAIN_PORT || 8545}`, chainId: sandboxChainId },
    // Every network of the table by its name (`npm run deploy -- --network base-sepolia`), on <NAME>_RPC_URL.
    ...Object.fromEntries(
      NETWORK_LIST.map((n) => [n.name, { url: process.env[rpcUrlKey(n.name)] ?? n.publicRpcUrl, chainId: n.chainId, accounts }]),
    ),
  },
  // Etherscan's v2 API: one key for every chain (Basescan included); Sourcify needs none.
  etherscan: { apiKey: process.env.ETHERSCAN_API_KEY ?? "" },
  sourcify: { enabled: true },
  gasReporter: { enabled: false },
  mocha: { timeout: 120_000 },
};

export default config;
