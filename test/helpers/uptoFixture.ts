/**
 * The upto ceiling of a stock @x402/evm upto client, signed through the agent wallet: its Permit2 witness transfer
 * (digest and the wallet's 97-byte signature) and the Ceiling the operator authorises for it.
 */
import { UptoEvmScheme } from "@x402/evm/upto/client";
import type { CeilingInput } from "../../src/chain/schemeOps";
import { type Permit2Authorization, ceilingOf } from "../../src/payments/schemes/uptoPayment";
import { paymentId } from "./policyFixture";
import { type Signed, atChainTime, requirements, walletClientSigner } from "./schemesFixture";

/** The stock upto client's payload for `amount` to `payTo` (facilitator `facilitator`), signed by the wallet. */
export async function stockCeiling(
  f: { agent: string; agentKey: Parameters<typeof walletClientSigner>[1]; tokenAddress: string },
  payTo: string,
  amount: bigint,
  facilitator: string,
): Promise<{ id: string; ceiling: CeilingInput; permit: Signed }> {
  const id = paymentId();
  const log: Signed[] = [];
  const scheme = new UptoEvmScheme(walletClientSigner(f.agent, f.agentKey, () => id, log));
  const result = await atChainTime(() =>
    scheme.createPaymentPayload(2, requirements("upto", f.tokenAddress, payTo, amount, { facilitatorAddress: facilitator })),
  );
  const a = (result.payload as { permit2Authorization: Permit2Authorization }).permit2Authorization;
  const ceiling = ceilingOf(a);
  const permit = log.find((s) => s.primaryType === "PermitWitnessTransferFrom");
  if (!permit) throw new Error("the upto client signed no PermitWitnessTransferFrom");
  return { id, ceiling, permit };
}
