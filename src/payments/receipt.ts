/**
 * The receipt step (docs/receipts.md): a payment made under a seller's signed offer keeps the offer on its entry, and
 * once it settled, the seller's receipt as checked. A receipt that fails, or is missing, flags the entry (and the
 * owner's payment.receipt_invalid webhook): the money moved, so the entry stays approved.
 */
import type { PaymentOffer, PaymentReceipt } from "../store/documents";
import type { SellerResponse } from "../x402/buyer";
import { type VerifiedOffer, checkReceipt } from "../x402/offerReceipt";
import type { Room } from "./context";

/** The offer as the ledger entry keeps it. */
export function offerRecord(o: VerifiedOffer): PaymentOffer {
  return { format: o.format, signer: o.signer, signed: { ...o.signed } };
}

/** The seller's receipt for a settled payment made under `offer` by wallet `payer`, checked, as the entry keeps it. */
export async function receiptRecord(
  room: Room,
  offer: VerifiedOffer,
  res: Pick<SellerResponse, "headers">,
  payer: string,
  settledTx: string | null,
): Promise<PaymentReceipt> {
  const c = await checkReceipt(res.headers, offer, payer, settledTx).catch((err: unknown): Awaited<ReturnType<typeof checkReceipt>> => {
    room.ctx.logger.warn({ err }, "a seller's receipt could not be checked");
    return { verified: false, signer: null, issuedAt: null, problem: "the receipt could not be checked", signed: null };
  });
  return {
    verified: c.verified,
    signer: c.signer,
    issuedAt: c.issuedAt,
    problem: c.problem,
    signed: c.signed ? { ...c.signed } : null,
  };
}
