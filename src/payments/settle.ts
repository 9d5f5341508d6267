/**
 * The settle step: whether the seller settled the payment, judged on-chain. The seller's word (its PAYMENT-RESPONSE)
 * is checked against its transaction, which must carry our AuthorizationUsed; without one, the authorisation state
 * decides (only a settlement can use the nonce: the wallet signs nothing else).
 */
import { type SellerResponse, readPaymentRequired, readSettlement } from "../x402/buyer";
import type { Room } from "./context";

export type Settlement =
  | { kind: "settled"; txHash: string | null }
  /** The seller's x402 `settlement_pending`: broadcast, not yet confirmed (pendingSettlement.ts decides it). */
  | { kind: "pending"; txHash: string }
  /** Not settled: the seller's reason, for the answer and the ledger. */
  | { kind: "unsettled"; reason: string };

/** x402's non-terminal settlement answer (@x402/core 2.24 and later): broadcast, with its hash, not yet confirmed. */
const PENDING = "settlement_pending";
const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

export async function settled(
  room: Room,
  agent: string,
  paymentId: string,
  authorizeBlock: number,
  res: SellerResponse,
): Promise<Settlement> {
  const { ops } = room;
  const settlement = readSettlement(res);
  const claimed = settlement?.success && settlement.transaction ? settlement.transaction : null;
  const inSellerTx = claimed !== null && (await ops.settledIn(claimed, agent, paymentId).catch(() => false));
  const used = inSellerTx || (await ops.authorizationUsed(agent, paymentId));
  const pending = settlement && !settlement.success && settlement.errorReason === PENDING ? settlement.transaction : null;
  if (!used && pending && TX_HASH.test(pending)) return { kind: "pending", txHash: pending };
  if (!used) {
    const reason =
      (settlement && !settlement.success && settlement.errorReason) ||
      (res.body && typeof res.body === "object" && "error" in res.body ? String(res.body.error) : null) ||
      refusalOf(res) ||
      `HTTP ${res.status}`;
    return { kind: "unsettled", reason };
  }
  return { kind: "settled", txHash: inSellerTx ? claimed : await ops.settlementTx(agent, paymentId, authorizeBlock) };
}

/** The reason a seller's 402 gives for refusing a payment (its facilitator's verify, in the requirement's `error`). */
function refusalOf(res: SellerResponse): string | null {
  if (res.status !== 402) return null;
  try {
    return readPaymentRequired(res).error ?? null;
  } catch {
    return null;
  }
}
