/**
 * The quote step: the seller's x402 answer to the unpaid request, and the one requirement this service would pay.
 * Same request rules as the paid request (SSRF guard, https unless allowed, bounded time and size, same-host
 * redirects). Nothing is signed or sent here.
 */
import type { PaymentRequired } from "@x402/core/types";
import { type AppError, appError, gatewayTimeout, transient, upstreamError } from "../errors";
import { type Quote, type SellerRequest, SellerError, pickQuote, readPaymentRequired, requestSeller, sellerOptions } from "../x402/buyer";
import { readOffers } from "../x402/offerReceipt";
import { type SignedOffers, noQuoteDetail } from "../x402/pick";
import type { PaymentScheme } from "../schemas/payments";
import type { PaymentContext, Room } from "./context";
import { type Refused, refused } from "./result";

/** Retry-After of a payment refused before paying because its seller could not be reached. */
const SELLER_RETRY_S = 5;

/**
 * What the seller asks: every payment it accepts, the offers it signed, and the one this service would pay (null: none
 * it can pay here).
 */
export type Quoted = { kind: "quoted"; paymentRequired: PaymentRequired; offers: SignedOffers; quote: Quote | null };

/** Maps a seller problem to the error the caller sees (always in the interface's error shape). */
export function sellerAppError(err: SellerError): AppError {
  if (err.code === "seller_timeout") return gatewayTimeout(err.message);
  return appError(err.code === "seller_unreachable" ? "upstream_error" : err.code, err.message);
}

/** Asks the seller for its 402 without paying, as `payer` would pay it. */
export async function sellerQuote(
  room: Room,
  seller: SellerRequest,
  payer: string,
  schemes?: readonly PaymentScheme[],
): Promise<Quoted | Refused> {
  const opts = sellerOptions(room.ctx.config);
  let res;
  try {
    res = await requestSeller(seller, opts);
  } catch (err) {
    if (!(err instanceof SellerError)) throw err;
    // Before anything is signed or sent: a seller out of reach is transient (the same key pays once it is back).
    const e = sellerAppError(err);
    return refused(err.code === "seller_unreachable" || err.code === "seller_timeout" ? transient(e, SELLER_RETRY_S) : e);
  }
  if (res.status !== 402) {
    if (res.status >= 200 && res.status < 300) {
      return refused(
        appError("payment_not_required", `The seller answered HTTP ${res.status} without asking for payment; nothing was paid.`),
      );
    }
    const wrong = upstreamError(`The seller answered HTTP ${res.status} instead of an x402 payment requirement (402).`, {
      sellerStatus: res.status,
    });
    // A seller down or busy (5xx, 429, 408) may answer later; another status is its answer.
    return refused(res.status >= 500 || res.status === 429 || res.status === 408 ? transient(wrong, SELLER_RETRY_S) : wrong);
  }
  try {
    const paymentRequired = readPaymentRequired(res);
    // Verified only when the seller signed some (no work, and no store command, for a seller that signs nothing).
    const offers = await readOffers(paymentRequired, res.url);
    return { kind: "quoted", paymentRequired, offers, quote: pickQuote(paymentRequired, { ...opts, payer, schemes, offers }) };
  } catch (err) {
    if (err instanceof SellerError) return refused(sellerAppError(err));
    throw err;
  }
}

/**
 * The seller's quote for the payment's agent; null when it offers no USDC payment on the agent's network (`detail`
 * then says which networks it does offer).
 */
export async function quote(
  room: Room,
  pc: Pick<PaymentContext, "seller" | "schemes"> & { agent: { address: string } },
): Promise<{ kind: "quote"; quote: Quote | null; offers: SignedOffers; detail?: string } | Refused> {
  const q = await sellerQuote(room, pc.seller, pc.agent.address, pc.schemes);
  if (q.kind === "refused") return q;
  return {
    kind: "quote",
    quote: q.quote,
    offers: q.offers,
    ...(q.quote ? {} : { detail: noQuoteDetail(q.paymentRequired, room.ctx.config.chainId, q.offers) }),
  };
}
