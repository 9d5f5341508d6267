/** Well-known addresses, in one place. */

/** USDC of the networks we run on, by chain id (the embedded chain uses Base's chain id 8453 and address). */
export const USDC_ADDRESSES: Readonly<Record<number, string>> = {
  8453: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  84532: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
};

export const BASE_USDC = USDC_ADDRESSES[8453];

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

/** Multicall3, at the same address on Base, Base Sepolia and the embedded chain. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;

/** WETH on Base and Base Sepolia (an OP Stack predeploy), and on the embedded chain. */
export const WETH_ADDRESS = "0x4200000000000000000000000000000000000006" as const;

/** The fee tier of the USDC/WETH pool swaps go through: 0.05% (in hundredths of a basis point). */
export const UNISWAP_POOL_FEE = 500;

export interface UniswapDeployment {
  factory: string;
  swapRouter02: string;
  quoterV2: string;
  positionManager: string;
}

/**
 * Uniswap v3 on Base and Base Sepolia, from Uniswap's deployment list
 * (https://docs.uniswap.org/contracts/v3/reference/deployments/base-deployments) and Base's
 * (https://docs.base.org/chain/contracts), which agree. The USDC/WETH pool is derived from the factory
 * (uniswapMath.poolAddress) and checked on-chain by the deploy script.
 */
export const UNISWAP_ADDRESSES: Readonly<Record<number, UniswapDeployment>> = {
  8453: {
    factory: "0x33128a8fC17869897dcE68Ed026d694621f6FDfD",
    swapRouter02: "0x2626664c2603336E57B271c5C0b26F421741e481",
    quoterV2: "0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a",
    positionManager: "0x03a520b32C04BF3bEEf7BEb72E919cf822Ed34f1",
  },
  84532: {
    factory: "0x4752ba5DBc23f44D87826276BF6Fd6b1C372aD24",
    swapRouter02: "0x94cC0AaC535CCDB3C01d6787D6413C739ae12bc4",
    quoterV2: "0xC5290058841028F1614F3A6F0F5816cAd0df5E27",
    positionManager: "0x27F971cb582BF9E50F397e4d29a5C7A34f11faA2",
  },
};
