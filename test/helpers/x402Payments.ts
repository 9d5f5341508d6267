/** x402 payments for the facilitator tests: a v2 exact USDC requirement, and a payment signed by a new EOA. */
import { x402Client } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { viemAccounts } from "../../src/chain/viem";

/** A buyer: a viem LocalAccount (random key) with the real x402 client; no RPC needed to sign. */
export function newBuyer() {
  const account = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey());
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  return { address: account.address, client };
}

/** The exact-scheme v2 requirement to pay `amount` USDC (base units) at `usdc` to `payTo` on Base. */
export function usdcRequirement(
  usdc: string,
  payTo: string,
  amount: bigint,
  overrides: Partial<PaymentRequirements> = {},
): PaymentRequirements {
  return {
    scheme: "exact",
    network: "eip155:8453",
    asset: usdc,
    amount: amount.toString(),
    payTo,
    maxTimeoutSeconds: 120,
    extra: { name: "USD Coin", version: "2" },
    ...overrides,
  };
}

/** A payment of `requirement` signed by a new EOA, which `fund` gives its USDC first. */
export async function eoaPayment(requirement: PaymentRequirements, fund: (address: string) => Promise<unknown>): Promise<PaymentPayload> {
  const buyer = newBuyer();
  await fund(buyer.address);
  return buyer.client.createPaymentPayload({ x402Version: 2, resource: { url: "http://127.0.0.1/sell" }, accepts: [requirement] });
}
