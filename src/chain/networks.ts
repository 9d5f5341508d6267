/**
 * The networks SpendGate runs on: one typed entry per network, every fact about the outside world in one place, with
 * where it came from. Nothing else in the code writes a chain id, a token address or a token's EIP-712 domain.
 *
 * Sources, per group of facts:
 * - USDC (address, EIP-712 `name` and `version`, 6 decimals): `@x402/evm` 2.27.0's own table of default stablecoins
 *   (`DEFAULT_ASSETS` in node_modules/@x402/evm/dist/cjs/index.js), which stock x402 clients and facilitators sign and
 *   check against, held against Circle's published addresses (https://developers.circle.com/stablecoins/usdc-contract-addresses).
 *   Only networks whose USDC that table lists with an EIP-3009 domain are here (no Permit2-only token): the agent
 *   wallet pays by EIP-3009 `transferWithAuthorization`, which USDC (FiatToken v2.2) checks with ERC-1271.
 * - x402 v1 names: `@x402/evm` 2.27.0's `EVM_NETWORK_CHAIN_ID_MAP` (the same file); null where x402 v1 has no name
 *   (such a network is paid over x402 v2 only). CAIP-2 ids are `eip155:<chain id>`.
 * - WETH and Uniswap v3 (factory, SwapRouter02, QuoterV2, NonfungiblePositionManager): Uniswap's deployment pages
 *   (https://docs.uniswap.org/contracts/v3/reference/deployments/, files v3-base-deployments.mdx,
 *   v3-arbitrum-deployments.mdx and v3-ethereum-deployments.mdx of github.com/Uniswap/docs), whose "Wrapped Native
 *   Token" rows give WETH. Null where
 *   the network has no WETH/USDC route SpendGate swaps through: swaps before settlement are off there.
 * - Explorers, public RPCs and native currencies: each chain's own documentation (docs.base.org, docs.arbitrum.io,
 *   docs.celo.org, docs.polygon.technology, build.avax.network; Ethereum's RPC is PublicNode's, listed on ethereum.org). The public RPC is only what a wallet is asked to add
 *   (`wallet_addEthereumChain`); the service itself uses RPC_URL / <NAME>_RPC_URL.
 */

export interface UniswapDeployment {
  factory: string;
  swapRouter02: string;
  quoterV2: string;
  positionManager: string;
}

export interface NetworkInfo {
  /** SpendGate's name of the network: NETWORK, NETWORKS, deployments/<name>.json, an agent's `network`. */
  name: string;
  /** What people read ("Base Sepolia"). */
  displayName: string;
  chainId: number;
  /** CAIP-2, the x402 v2 network id. */
  caip2: `eip155:${number}`;
  /** The x402 v1 network name, or null where x402 v1 names none. */
  x402V1: string | null;
  testnet: boolean;
  /** Circle's USDC, with its EIP-712 domain exactly as the token contract answers `name()` and `version()`. */
  usdc: { address: string; name: string; version: string };
  /** WETH9 of the network (null: swaps off). */
  weth: string | null;
  /** Uniswap v3 (null: swaps off). */
  uniswap: UniswapDeployment | null;
  /** Block explorer (links `<explorer>/tx/<hash>`). */
  explorer: string;
  /** A public JSON-RPC URL, for a wallet's "add network" only. */
  publicRpcUrl: string;
  nativeCurrency: { name: string; symbol: string; decimals: number };
}

const ETHER = { name: "Ether", symbol: "ETH", decimals: 18 } as const;
/** WETH on the OP Stack chains: a predeploy (Base and Base Sepolia alike). */
const OP_STACK_WETH = "0x4200000000000000000000000000000000000006";

export const NETWORKS = {
  base: {
    name: "base",
    displayName: "Base",
    chainId: 8453,
    caip2: "eip155:8453",
    x402V1: "base",
    testnet: false,
    usdc: { address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", name: "USD Coin", version: "2" },
    weth: OP_STACK_WETH,
    uniswap: {
      factory: "0x33128a8fC17869897dcE68Ed026d694621f6FDfD",
      swapRouter02: "0x2626664c2603336E57B271c5C0b26F421741e481",
      quoterV2: "0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a",
      positionManager: "0x03a520b32C04BF3bEEf7BEb72E919cf822Ed34f1",
    },
    explorer: "https://basescan.org",
    publicRpcUrl: "https://mainnet.base.org",
    nativeCurrency: ETHER,
  },
  "base-sepolia": {
    name: "base-sepolia",
    displayName: "Base Sepolia",
    chainId: 84532,
    caip2: "eip155:84532",
    x402V1: "base-sepolia",
    testnet: true,
    usdc: { address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", name: "USDC", version: "2" },
    weth: OP_STACK_WETH,
    uniswap: {
      factory: "0x4752ba5DBc23f44D87826276BF6Fd6b1C372aD24",
      swapRouter02: "0x94cC0AaC535CCDB3C01d6787D6413C739ae12bc4",
      quoterV2: "0xC5290058841028F1614F3A6F0F5816cAd0df5E27",
      positionManager: "0x27F971cb582BF9E50F397e4d29a5C7A34f11faA2",
    },
    explorer: "https://sepolia.basescan.org",
    publicRpcUrl: "https://sepolia.base.org",
    nativeCurrency: ETHER,
  },
  arbitrum: {
    name: "arbitrum",
    displayName: "Arbitrum One",
    chainId: 42161,
    caip2: "eip155:42161",
    x402V1: null,
    testnet: false,
    usdc: { address: "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", name: "USD Coin", version: "2" },
    weth: "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1",
    uniswap: {
      factory: "0x1F98431c8aD98523631AE4a59f267346ea31F984",
      swapRouter02: "0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45",
      quoterV2: "0x61fFE014bA17989E743c5F6cB21bF9697530B21e",
      positionManager: "0xC36442b4a4522E871399CD717aBDD847Ab11FE88",
    },
    explorer: "https://arbiscan.io",
    publicRpcUrl: "https://arb1.arbitrum.io/rpc",
    nativeCurrency: ETHER,
  },
  "arbitrum-sepolia": {
    name: "arbitrum-sepolia",
    displayName: "Arbitrum Sepolia",
    chainId: 421614,
    caip2: "eip155:421614",
    x402V1: null,
    testnet: true,
    usdc: { address: "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d", name: "USD Coin", version: "2" },
    weth: "0x980B62Da83eFf3D4576C647993b0c1D7faf17c73",
    uniswap: {
      factory: "0x248AB79Bbb9bC29bB72f7Cd42F17e054Fc40188e",
      swapRouter02: "0x101F443B4d1b059569D643917553c771E1b9663E",
      quoterV2: "0x2779a0CC1c3e0E44D2542EC3e79e3864Ae93Ef0B",
      positionManager: "0x6b2937Bde17889EDCf8fbD8dE31C3C2a70Bc4d65",
    },
    explorer: "https://sepolia.arbiscan.io",
    publicRpcUrl: "https://sepolia-rollup.arbitrum.io/rpc",
    nativeCurrency: ETHER,
  },
  // Celo's gas token is CELO, not ETH, and it has no WETH/USDC pool SpendGate swaps through: swaps off.
  celo: {
    name: "celo",
    displayName: "Celo",
    chainId: 42220,
    caip2: "eip155:42220",
    x402V1: "celo",
    testnet: false,
    usdc: { address: "0xcebA9300f2b948710d2653dD7B07f33A8B32118C", name: "USDC", version: "2" },
    weth: null,
    uniswap: null,
    explorer: "https://celoscan.io",
    publicRpcUrl: "https://forno.celo.org",
    nativeCurrency: { name: "Celo", symbol: "CELO", decimals: 18 },
  },
  "celo-sepolia": {
    name: "celo-sepolia",
    displayName: "Celo Sepolia",
    chainId: 11142220,
    caip2: "eip155:11142220",
    x402V1: null,
    testnet: true,
    usdc: { address: "0x01C5C0122039549AD1493B8220cABEdD739BC44E", name: "USDC", version: "2" },
    weth: null,
    uniswap: null,
    explorer: "https://celo-sepolia.blockscout.com",
    publicRpcUrl: "https://forno.celo-sepolia.celo-testnet.org",
    nativeCurrency: { name: "Celo", symbol: "CELO", decimals: 18 },
  },
  // Mainnets whose testnet USDC @x402/evm does not list (Ethereum Sepolia, Polygon Amoy, Avalanche Fuji). Ethereum's
  // Uniswap and WETH: v3-ethereum-deployments.mdx; on Polygon and Avalanche gas is POL and AVAX and WETH a bridged
  // token: swaps off.
  ethereum: {
    name: "ethereum",
    displayName: "Ethereum",
    chainId: 1,
    caip2: "eip155:1",
    x402V1: "ethereum",
    testnet: false,
    usdc: { address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", name: "USD Coin", version: "2" },
    weth: "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
    uniswap: {
      factory: "0x1F98431c8aD98523631AE4a59f267346ea31F984",
      swapRouter02: "0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45",
      quoterV2: "0x61fFE014bA17989E743c5F6cB21bF9697530B21e",
      positionManager: "0xC36442b4a4522E871399CD717aBDD847Ab11FE88",
    },
    explorer: "https://etherscan.io",
    publicRpcUrl: "https://ethereum-rpc.publicnode.com",
    nativeCurrency: ETHER,
  },
  polygon: {
    name: "polygon",
    displayName: "Polygon PoS",
    chainId: 137,
    caip2: "eip155:137",
    x402V1: "polygon",
    testnet: false,
    usdc: { address: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", name: "USD Coin", version: "2" },
    weth: null,
    uniswap: null,
    explorer: "https://polygonscan.com",
    publicRpcUrl: "https://polygon-rpc.com",
    nativeCurrency: { name: "POL", symbol: "POL", decimals: 18 },
  },
  avalanche: {
    name: "avalanche",
    displayName: "Avalanche C-Chain",
    chainId: 43114,
    caip2: "eip155:43114",
    x402V1: "avalanche",
    testnet: false,
    usdc: { address: "0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E", name: "USD Coin", version: "2" },
    weth: null,
    uniswap: null,
    explorer: "https://snowtrace.io",
    publicRpcUrl: "https://api.avax.network/ext/bc/C/rpc",
    nativeCurrency: { name: "Avalanche", symbol: "AVAX", decimals: 18 },
  },
} as const satisfies Record<string, NetworkInfo>;

export type NetworkName = keyof typeof NETWORKS;
export type Network = (typeof NETWORKS)[NetworkName];

/** Every network of the table, in its order. */
export const NETWORK_LIST: readonly Network[] = Object.values(NETWORKS);
export const NETWORK_NAMES = Object.keys(NETWORKS) as readonly NetworkName[];

/** The network run when NETWORK and NETWORKS are unset. */
export const DEFAULT_NETWORK: NetworkName = "base";

export function isNetworkName(name: string): name is NetworkName {
  return Object.hasOwn(NETWORKS, name);
}

/** The table's entry for a chain id, if any. */
export function networkOfChainId(chainId: number | bigint): Network | undefined {
  return NETWORK_LIST.find((n) => n.chainId === Number(chainId));
}

/** The chain id of an x402 network id: `eip155:<id>` (v2), or a v1 name of the table; undefined for anything else. */
export function chainIdOfX402Network(network: string): number | undefined {
  const caip2 = /^eip155:([1-9]\d{0,15})$/.exec(network);
  if (caip2) return Number(caip2[1]);
  return NETWORK_LIST.find((n) => n.x402V1 !== null && n.x402V1 === network)?.chainId;
}

/** The x402 network id a requirement names for `network` in protocol `version` (null: that version cannot name it). */
export function x402NetworkId(network: Network, version: 1 | 2): string | null {
  return version === 1 ? network.x402V1 : network.caip2;
}

/** The environment variable holding a network's JSON-RPC URL: `BASE_SEPOLIA_RPC_URL` for base-sepolia. */
export function rpcUrlKey<N extends NetworkName>(name: N): RpcUrlKey<N> {
  return `${name.toUpperCase().replaceAll("-", "_")}_RPC_URL` as RpcUrlKey<N>;
}

type Underscored<S extends string> = S extends `${infer A}-${infer B}` ? `${A}_${Underscored<B>}` : S;
export type RpcUrlKey<N extends NetworkName = NetworkName> = N extends NetworkName ? `${Uppercase<Underscored<N>>}_RPC_URL` : never;

/** Multicall3, at its canonical address on every network of the table and on the embedded chain. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;

/**
 * The deterministic deployment proxy (github.com/Arachnid/deterministic-deployment-proxy): the same address on every
 * EVM network (deployed by a one-time account; an OP Stack preinstall on Base and Base Sepolia). A call with data
 * salt (32 bytes) then init code deploys that code with CREATE2 and answers its 20-byte address. Its runtime code is
 * what the proxy's published deployment transaction creates; the embedded chain places it with hardhat_setCode.
 */
export const DETERMINISTIC_DEPLOYER = {
  address: "0x4e59b44847b379578588920ca78fbf26c0b4956c",
  runtimeCode:
    "0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3",
} as const;
