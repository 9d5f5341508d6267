/**
 * Nonce and fees for the in-process facilitator's transactions, which its queue sends one at a time. Left to viem,
 * every settlement asked the node for the account's nonce and for fee data (a block, the priority fee, the gas price:
 * five calls measured); here the nonce is counted locally and asked again only after a failed send (at once, and the
 * send retried, when the node said the nonce was too low: another sender used the key), and fee data is refreshed every
 * few seconds beside the sends.
 */
import type { SignerClient } from "../chain/viem";

export interface SendOverrides {
  nonce: number;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
}

const FEE_TTL_MS = 2_000;
/** viem's NonceTooLowError, and the node's own words (Hardhat: "Nonce too low"). */
const NONCE_TOO_LOW = /nonce (too low|provided for the transaction is lower)/i;

export function facilitatorSends(client: Pick<SignerClient, "account" | "getTransactionCount" | "estimateFeesPerGas">) {
  let nonce: number | undefined;
  let fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;
  let refreshing: Promise<void> | undefined;

  const refreshFees = async () => {
    const f = await client.estimateFeesPerGas();
    // Headroom over the current base fee so a transaction survives a few rising blocks (only what is used is paid).
    fees = { at: Date.now(), maxFeePerGas: f.maxFeePerGas * 2n, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
  };

  /** Runs one send with the next nonce and current fees; call it from the facilitator's one-at-a-time queue only. */
  return async function send<T>(fn: (o: SendOverrides) => Promise<T>): Promise<T> {
    nonce ??= await client.getTransactionCount({ address: client.account.address, blockTag: "pending" });
    if (!fees) {
      await refreshFees().catch(() => undefined); // without fee data viem estimates them itself
    } else if (Date.now() - fees.at > FEE_TTL_MS && !refreshing) {
      refreshing = refreshFees()
        .catch(() => undefined)
        .finally(() => (refreshing = undefined));
    }
    const attempt = async (n: number) => {
      const result = await fn({
        nonce: n,
        ...(fees ? { maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas } : {}),
      });
      nonce = n + 1;
      return result;
    };
    try {
      return await attempt(nonce);
    } catch (err) {
      nonce = undefined; // unknown whether the nonce was used: ask the node next time
      // A nonce below the account's was refused, so nothing was sent: once more with the node's count.
      if (!NONCE_TOO_LOW.test(err instanceof Error ? err.message : String(err))) throw err;
      return attempt(await client.getTransactionCount({ address: client.account.address, blockTag: "pending" }));
    }
  };
}
