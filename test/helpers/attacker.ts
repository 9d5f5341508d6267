/**
 * A compromised server: whoever holds every secret the service has (the operator key, the agents' signing keys,
 * and through the encryption key and the database, everything else) and tries every way to move an agent's money
 * that its owner-signed policy does not allow. Each attempt goes to the real contracts; the suite asserts each is
 * refused on-chain and counts what left the wallet.
 *
 * The attack families: attackerPolicy.ts (the wallet, its payments and its owner's powers; draining within the
 * policy), attackerSwap.ts (swapForPayment); what they share is in attackerBase.ts.
 */
export { settleFromWallet, transferDigest, type Attempt, type Secrets, type Target } from "./attackerBase";
export { drainWithinPolicy, runAttacks } from "./attackerPolicy";
export { runSwapAttacks, type SwapTarget } from "./attackerSwap";
