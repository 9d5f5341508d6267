/**
 * The send step: the signed payment leaves this process, with the paid request, for the seller. Only after the policy
 * authorised it on-chain and its settlement simulated cleanly (execute.ts). From here every outcome is "maybe paid".
 */
import { upstreamError } from "../errors";
import { type SellerRequest, type SellerResponse, type SignedPayment, SellerError, requestSeller, sellerOptions } from "../x402/buyer";
import type { Room } from "./context";
import { sellerAppError } from "./quote";
import { type Refused, refused } from "./result";

/** The seller's answer to the paid request, or why there is none (`detail` for the ledger). */
export async function send(
  room: Room,
  seller: SellerRequest,
  signed: Pick<SignedPayment, "headers">,
): Promise<{ kind: "answered"; res: SellerResponse } | (Refused & { detail: string })> {
  try {
    const res = await room.ctx.telemetry.step("send", () => requestSeller(seller, sellerOptions(room.ctx.config), signed.headers));
    return { kind: "answered", res };
  } catch (err) {
    const error = err instanceof SellerError ? sellerAppError(err) : upstreamError("The seller's answer could not be read.");
    return { ...refused(error), detail: `seller: ${err instanceof SellerError ? err.code : (err as Error).message}` };
  }
}
