/**
 * Which of a seller's x402 requirements SpendGate pays: USDC on the paying agent's network (its chain id), in one of
 * the schemes it supports (docs/schemes.md), the caller's preference order first. Reading only: nothing is signed here.
 */
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { networkOfChainId, x402NetworkId } from "../chain/networks";
import { isAddress } from "../chain/rpc/checksum";
import { PAYMENT_SCHEMES, type PaymentScheme } from "../schemas/payments";
import { type VerifiedOffer, offerFor } from "./offerReceipt";

export interface Quote {
  paymentRequired: PaymentRequired;
  requirement: PaymentRequirements;
  /**
   * In token base units: exact, the price; upto, the ceiling signed (the seller settles at most that);
   * batch-settlement, the most one request's voucher adds to the channel's cumulative.
   */
  amount: bigint;
  version: 1 | 2;
  scheme: PaymentScheme;
  /** The seller's signed offer of exactly this requirement (docs/receipts.md); null when it signed none. */
  offer?: VerifiedOffer | null;
}

/** A seller's signed offers: how many its 402 carried, and those whose signatures verify. */
export interface SignedOffers {
  sent: number;
  offers: readonly VerifiedOffer[];
}

export interface PickOptions {
  chainId: number;
  usdcAddress: string;
  /** The paying wallet: a requirement paying it is no payment. */
  payer?: string;
  /** The schemes allowed, most preferred first (default PAYMENT_SCHEMES). */
  schemes?: readonly PaymentScheme[];
  /** When the seller signed offers, only a requirement one of them names (verified, unexpired) is paid. */
  offers?: SignedOffers;
}

/**
 * The x402 EVM client signs EIP-3009 (transferWithAuthorization) by default, and a Permit2 message when the
 * requirement's `extra.assetTransferMethod` says so. SpendGate settles EIP-3009 only for exact (the nonce is its
 * paymentId) and channel deposits (the wallet authorises the ERC-3009 collector path only), so a requirement naming
 * any other transfer method is not one it can pay.
 */
function signsEip3009(extra: unknown): boolean {
  if (extra === undefined || extra === null || typeof extra !== "object") return true;
  const method = (extra as { assetTransferMethod?: unknown }).assetTransferMethod;
  return method === undefined || method === "eip3009";
}

/** USDC's EIP-712 domain name and version, which the signature needs (the x402 client throws without them). */
function hasTokenDomain(extra: unknown): boolean {
  const e = extra as { name?: unknown; version?: unknown } | null | undefined;
  return (
    typeof e?.name === "string" &&
    e.name.length > 0 &&
    e.name.length <= 100 &&
    typeof e.version === "string" &&
    e.version.length > 0 &&
    e.version.length <= 20
  );
}

/** A checksum-valid, non-zero address (a mixed-case address whose EIP-55 checksum is wrong is a typo or a trick). */
function anAddress(v: unknown): v is string {
  return typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v) && !/^0x0{40}$/i.test(v) && isAddress(v);
}

/**
 * The channel contract's bounds on a channel's withdraw delay (the x402 batch-settlement specification): a seller
 * asking for more would lock a deposit it does not refund for longer than the wallet's forced withdrawal may wait.
 */
const MIN_WITHDRAW_DELAY = 15 * 60;
const MAX_WITHDRAW_DELAY = 30 * 24 * 3600;

/** What each scheme needs beyond the common fields, read from the requirement's `extra`. */
const SCHEME_RULES: Record<PaymentScheme, (extra: Record<string, unknown> | undefined) => boolean> = {
  exact: (extra) => signsEip3009(extra) && hasTokenDomain(extra),
  // The witness names the one facilitator allowed to settle; the upto client cannot sign without it.
  upto: (extra) => anAddress(extra?.facilitatorAddress),
  // Deposits through USDC's receiveWithAuthorization (the only deposit the wallet authorises); a refund needs the
  // receiver's authorizer, and a withdraw delay out of range would make a channel the contract refuses.
  "batch-settlement": (extra) =>
    signsEip3009(extra) &&
    hasTokenDomain(extra) &&
    anAddress(extra?.receiverAuthorizer) &&
    (extra?.withdrawDelay === undefined ||
      (typeof extra.withdrawDelay === "number" &&
        Number.isSafeInteger(extra.withdrawDelay) &&
        extra.withdrawDelay >= MIN_WITHDRAW_DELAY &&
        extra.withdrawDelay <= MAX_WITHDRAW_DELAY)),
};

/** The x402 network id of chain `chainId` in protocol `version`: its CAIP-2 id, or its v1 name (null: v1 names none). */
export function networkIdOf(chainId: number, version: 1 | 2): string | null {
  const known = networkOfChainId(chainId);
  if (known) return x402NetworkId(known, version);
  return version === 2 ? `eip155:${chainId}` : null;
}

/** The requirement SpendGate pays among those of a 402: the first allowed scheme the seller offers; null if none fits. */
export function pickQuote(paymentRequired: PaymentRequired, opts: PickOptions): Quote | null {
  const version = paymentRequired.x402Version === 1 ? 1 : 2;
  const network = networkIdOf(opts.chainId, version);
  if (network === null) return null;
  const fits = new Map<PaymentScheme, Quote>();
  for (const r of paymentRequired.accepts as unknown as Record<string, unknown>[]) {
    if (!r || typeof r !== "object") continue;
    const scheme = r.scheme as PaymentScheme;
    // The channel and metered schemes exist in x402 v2 only.
    if (!SCHEME_RULES[scheme] || (version === 1 && scheme !== "exact") || fits.has(scheme)) continue;
    if (r.network !== network) continue;
    const raw = version === 1 ? r.maxAmountRequired : r.amount;
    if (typeof r.asset !== "string" || r.asset.toLowerCase() !== opts.usdcAddress.toLowerCase()) continue;
    if (typeof raw !== "string" || !/^\d{1,30}$/.test(raw) || !anAddress(r.payTo)) continue;
    const extra = r.extra !== null && typeof r.extra === "object" ? (r.extra as Record<string, unknown>) : undefined;
    if (!SCHEME_RULES[scheme](r.extra === undefined ? undefined : (extra ?? { invalid: true }))) continue;
    // A string or absent maxTimeoutSeconds would be concatenated into validBefore by the x402 client.
    if (typeof r.maxTimeoutSeconds !== "number" || !Number.isSafeInteger(r.maxTimeoutSeconds) || r.maxTimeoutSeconds <= 0) continue;
    const amount = BigInt(raw);
    if (amount <= 0n) continue; // nothing to pay: not a payment
    // To the paying wallet itself: moves nothing, and the policy refuses to authorise it (a reverted transaction).
    if (opts.payer !== undefined && r.payTo.toLowerCase() === opts.payer.toLowerCase()) continue;
    const requirement = r as unknown as PaymentRequirements;
    const offer = opts.offers?.sent ? offerFor(opts.offers.offers, requirement, version) : null;
    if (opts.offers?.sent && !offer) continue; // the seller signed what it offers, and not this
    fits.set(scheme, { paymentRequired, requirement, amount, version, scheme, offer });
  }
  for (const scheme of opts.schemes ?? PAYMENT_SCHEMES) {
    const q = fits.get(scheme);
    if (q) return q;
  }
  return null;
}

/** A network id as a seller wrote it, fit to repeat in an answer (anything else is not named). */
const SHOWN_NETWORK = /^[A-Za-z0-9:_.-]{1,64}$/;

/**
 * Why pickQuote found nothing, in words for the refusal: the agent's network and, when the seller offers none on it,
 * the networks it does offer (at most five).
 */
export function noQuoteDetail(paymentRequired: PaymentRequired, chainId: number, offers?: SignedOffers): string {
  const version = paymentRequired.x402Version === 1 ? 1 : 2;
  const ours = networkIdOf(chainId, version);
  const name = networkOfChainId(chainId)?.name ?? `chain ${chainId}`;
  const accepts = (Array.isArray(paymentRequired.accepts) ? paymentRequired.accepts : []) as unknown as { network?: unknown }[];
  const offered = [
    ...new Set(accepts.map((r) => (typeof r?.network === "string" && SHOWN_NETWORK.test(r.network) ? r.network : null))),
  ].filter((n): n is string => n !== null);
  if (ours === null) return `the agent pays on ${name}, which x402 v1 does not name, and the seller answered in x402 v1`;
  if (!offered.includes(ours)) {
    return `the agent pays on ${name} (${ours}) only, and the seller offers ${offered.length ? offered.slice(0, 5).join(", ") : "no network"}`;
  }
  if (offers?.sent) {
    return `the seller signed its offers (${offers.sent}, ${offers.offers.length} with a valid signature for this host), and none of its requirements on ${name} (${ours}) that this agent may pay is one of them`;
  }
  return `the seller's offers on ${name} (${ours}) are not a USDC payment in a scheme this agent may use`;
}
