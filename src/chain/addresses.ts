/** Well-known addresses, in one place. */

/** USDC of the networks we run on, by chain id (the embedded chain uses Base's chain id 8453 and address). */
export const USDC_ADDRESSES: Readonly<Record<number, string>> = {
  8453: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  84532: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
};

export const BASE_USDC = USDC_ADDRESSES[8453];

/** Multicall3, at the same address on Base, Base Sepolia and the embedded chain. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;
