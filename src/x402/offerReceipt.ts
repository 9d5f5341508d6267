/**
 * The x402 offer-receipt extension, read as a buyer (docs/receipts.md): a seller's signed offers in its 402, and the
 * signed receipt in its settlement answer, checked with @x402/extensions' own functions. Reading only: what is done
 * with the verdicts (pay only an offered requirement, flag an entry) is the payment room's.
 *
 * JWS keys are taken from their `kid` only when it carries the key itself (did:key, did:jwk): a did:web kid would
 * make this service fetch a URL the seller names, so such a signature is not verified here.
 */
import {
  type DecodedOffer,
  type OfferPayload,
  type ReceiptPayload,
  type SignedOffer,
  type SignedReceipt,
  extractJWSHeader,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureEIP712,
  verifyOfferSignatureJWS,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureEIP712,
  verifyReceiptSignatureJWS,
} from "@x402/extensions/offer-receipt";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { recoverDigestSigner } from "../chain/ecdsa";
import { chainIdOfX402Network } from "../chain/networks";
import { offerDigest, receiptDigest } from "./offerReceiptDigest";

/** A seller's offer whose signature verified: who signed it (an address for EIP-712, the DID of a JWS key) and what. */
export interface VerifiedOffer {
  format: "eip712" | "jws";
  signer: string;
  payload: OfferPayload;
  /** The offer as the seller sent it (kept with the ledger entry: anyone can verify it again). */
  signed: SignedOffer;
}

/** The seller's receipt as checked against the offer paid: `problem` says why it is not verified. */
export interface ReceiptCheck {
  verified: boolean;
  /** Who signed it (null: missing, or no signature could be checked). */
  signer: string | null;
  issuedAt: number | null;
  problem: string | null;
  /** The receipt as the seller sent it, when it sent one. */
  signed: SignedReceipt | null;
}

/** Longest signature kept or checked (a JWS compact string with its payload; an EIP-712 signature is 132 characters). */
const MAX_SIGNATURE_CHARS = 4_096;
/** How old a receipt may be when it arrives (the stock default is an hour; it is issued as the request is served). */
const RECEIPT_MAX_AGE_S = 600;
/** At most this many offers are checked (one per requirement is usual). */
const MAX_OFFERS = 16;

const SELF_CONTAINED_KID = /^did:(key|jwk):/;

function shaped(x: unknown): x is { format: "eip712" | "jws"; signature: string } {
  const o = x as { format?: unknown; signature?: unknown } | null;
  return (
    typeof o === "object" &&
    o !== null &&
    (o.format === "eip712" || o.format === "jws") &&
    typeof o.signature === "string" &&
    o.signature.length <= MAX_SIGNATURE_CHARS
  );
}

/** The kid of a JWS whose key it carries; throws for any other (nothing is fetched). */
function selfContainedKid(jws: string): string {
  const { kid } = extractJWSHeader(jws);
  if (!kid || !SELF_CONTAINED_KID.test(kid)) throw new Error(`the JWS key ${kid ?? "(none)"} is not a did:key or did:jwk`);
  return kid;
}

/**
 * Offers' signers recovered, by digest and signature (a pure function's answers: a seller sends the same signed offers
 * for a minute or more), up to a bound, forgotten together when it is reached. A receipt is new every time: not kept.
 */
const signers = new Map<string, string>();
const SIGNERS_MAX = 1_024;

/**
 * An EIP-712 offer's or receipt's signer: the digest as the extension hashes it (offerReceiptDigest.ts), the signer
 * recovered natively (src/chain/ecdsa.ts); null when that path does not take the payload or the signature, and the
 * extension's own verify then decides.
 */
function fastSigner(digest: string | null, signature: string, keep: boolean): string | null {
  if (digest === null) return null;
  const key = `${digest}${signature}`;
  const kept = keep ? signers.get(key) : undefined;
  if (kept) return kept;
  const signer = recoverDigestSigner(digest, signature);
  if (signer && keep) {
    if (signers.size >= SIGNERS_MAX) signers.clear();
    signers.set(key, signer);
  }
  return signer;
}

async function verifyOffer(offer: SignedOffer): Promise<VerifiedOffer> {
  if (offer.format === "eip712") {
    const fast = fastSigner(offerDigest(offer.payload), offer.signature, true);
    const { signer, payload } = fast ? { signer: fast, payload: offer.payload } : await verifyOfferSignatureEIP712(offer);
    return { format: "eip712", signer, payload, signed: offer };
  }
  const signer = selfContainedKid(offer.signature);
  return { format: "jws", signer, payload: await verifyOfferSignatureJWS(offer), signed: offer };
}

/**
 * The seller's offers whose signatures verify and that speak for `requestedUrl`'s host (an offer signed for another
 * service is none of this one's); `sent` counts every offer the 402 carried, verified or not.
 */
export async function readOffers(
  paymentRequired: PaymentRequired,
  requestedUrl: string,
): Promise<{ sent: number; offers: VerifiedOffer[] }> {
  let raw: unknown;
  try {
    raw = extractOffersFromPaymentRequired(paymentRequired);
  } catch {
    return { sent: 0, offers: [] };
  }
  if (!Array.isArray(raw) || raw.length === 0) return { sent: 0, offers: [] };
  const host = new URL(requestedUrl).host;
  const checked = await Promise.all(
    raw.slice(0, MAX_OFFERS).map(async (o: unknown) => {
      if (!shaped(o)) return null;
      try {
        const v = await verifyOffer(o as SignedOffer);
        return new URL(v.payload.resourceUrl).host === host ? v : null;
      } catch {
        return null;
      }
    }),
  );
  return { sent: raw.length, offers: checked.filter((v): v is VerifiedOffer => v !== null) };
}

/** The offer of `offers` that names exactly `requirement` (scheme, network, asset, payTo, amount) and has not expired. */
export function offerFor(
  offers: readonly VerifiedOffer[],
  requirement: PaymentRequirements,
  version: 1 | 2,
  now = Date.now(),
): VerifiedOffer | null {
  const r = requirement as PaymentRequirements & { maxAmountRequired?: string };
  // An x402 v1 requirement names its network by name and its price as maxAmountRequired; offers use CAIP-2 and amount.
  const chainId = version === 1 ? chainIdOfX402Network(r.network) : undefined;
  const asOffered = {
    ...r,
    network: chainId ? `eip155:${chainId}` : r.network,
    amount: version === 1 ? (r.maxAmountRequired ?? "") : r.amount,
  };
  for (const o of offers) {
    const expired = o.payload.validUntil > 0 && now / 1000 > o.payload.validUntil;
    if (!expired && findAcceptsObjectFromSignedOffer(o.signed, [asOffered as PaymentRequirements])) return o;
  }
  return null;
}

async function verifyReceiptSignature(receipt: SignedReceipt): Promise<{ signer: string; payload: ReceiptPayload }> {
  if (receipt.format === "eip712") {
    const fast = fastSigner(receiptDigest(receipt.payload), receipt.signature, false);
    return fast ? { signer: fast, payload: receipt.payload } : verifyReceiptSignatureEIP712(receipt);
  }
  const signer = selfContainedKid(receipt.signature);
  return { signer, payload: await verifyReceiptSignatureJWS(receipt) };
}

const sameSigner = (a: string, b: string) => (a.startsWith("0x") ? a.toLowerCase() === b.toLowerCase() : a === b);

/**
 * The receipt of the seller's settlement answer (`headers`), checked against the offer paid under: signed by the
 * offer's signer, for the offer's resource and network, paid by `payer`, issued recently, and naming no other
 * transaction than the settlement `settledTx` found on-chain.
 */
export async function checkReceipt(
  headers: { get(name: string): string | null },
  offer: VerifiedOffer,
  payer: string,
  settledTx: string | null,
): Promise<ReceiptCheck> {
  let receipt: unknown;
  try {
    receipt = extractReceiptFromResponse({ headers } as unknown as Response);
  } catch {
    receipt = undefined;
  }
  const none = { verified: false, signer: null, issuedAt: null } as const;
  if (receipt === undefined || receipt === null) return { ...none, problem: "the seller sent no receipt for a signed offer", signed: null };
  if (!shaped(receipt)) return { ...none, problem: "the seller's receipt is not an offer-receipt receipt", signed: null };
  const signed = receipt as SignedReceipt;
  let signer: string;
  let payload: ReceiptPayload;
  try {
    ({ signer, payload } = await verifyReceiptSignature(signed));
  } catch (err) {
    return { ...none, problem: `the receipt's signature does not verify (${(err as Error).message.slice(0, 120)})`, signed };
  }
  const issuedAt = typeof payload.issuedAt === "number" ? payload.issuedAt : null;
  const fail = (problem: string): ReceiptCheck => ({ verified: false, signer, issuedAt, problem, signed });
  if (!sameSigner(signer, offer.signer)) return fail(`the receipt is signed by ${signer}, the offer by ${offer.signer}`);
  // The seller's JSON, typed but not checked.
  const named: unknown = payload.payer;
  if (typeof named !== "string" || named.toLowerCase() !== payer.toLowerCase()) {
    return fail(`the receipt names another payer (${typeof named === "string" ? named.slice(0, 66) : "none"}) than the agent's wallet`);
  }
  const decoded: DecodedOffer = { ...offer.payload, signedOffer: offer.signed, format: offer.format };
  if (!verifyReceiptMatchesOffer(signed, decoded, [payer], RECEIPT_MAX_AGE_S)) {
    return fail("the receipt does not match the offer paid (its resource, network or issue time)");
  }
  const tx = typeof payload.transaction === "string" ? payload.transaction : "";
  if (tx && (!settledTx || tx.toLowerCase() !== settledTx.toLowerCase())) {
    return fail(`the receipt names transaction ${tx.slice(0, 66)}, not this payment's settlement`);
  }
  return { verified: true, signer, issuedAt, problem: null, signed };
}
