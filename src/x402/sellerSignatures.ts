/**
 * What /sell/agent-intel signs (x402 offer-receipt, docs/receipts.md): its offers in every 402 and a receipt with every
 * settled payment, EIP-712 under a key of its own, through @x402/extensions' own issuer, so any stock client verifies
 * them. The key is derived from WALLET_ENCRYPTION_KEY (never stored; the same on every instance): not the operator's,
 * the facilitator's or any agent's, and it moves no money. Offers are signed once a minute per resource, not per 402.
 */
import { createHash } from "node:crypto";
import type { PaymentRequirements } from "@x402/core/types";
import {
  type OfferReceiptIssuer,
  type SignedOffer,
  type SignedReceipt,
  createEIP712OfferReceiptIssuer,
} from "@x402/extensions/offer-receipt";
import { SigningKey, computeAddress } from "ethers";
import { signDigest } from "../chain/ecdsa";
import { viem } from "../chain/viem";
import { DIGESTED, offerDigest, receiptDigest } from "./offerReceiptDigest";

/** How long an offer is valid (its validUntil), and how long a signed set is reused before it is signed again. */
const OFFER_VALIDITY_S = 300;
const REUSE_MS = 60_000;

/** The seller's signing key, derived from the service's encryption secret (a key of its own: docs/production.md). */
export function sellerSigningKey(walletEncryptionKey: string): `0x${string}` {
  return `0x${createHash("sha256").update(`spendgate seller offers and receipts\n${walletEncryptionKey}`).digest("hex")}`;
}

/**
 * What the issuer asks signed, hashed as viem's hashTypedData does: an offer's or a receipt's through the precomputed
 * digests when its domain and types are the extension's own (offerReceiptDigest.ts), anything else through viem.
 */
function typedDataDigest(p: Parameters<typeof viem.hashTypedData>[0]): string {
  const known = Object.hasOwn(DIGESTED, p.primaryType) ? DIGESTED[p.primaryType] : undefined;
  const fast =
    known && JSON.stringify(p.domain) === known.domain && JSON.stringify(p.types) === known.types
      ? (p.primaryType === "Offer" ? offerDigest : receiptDigest)(p.message)
      : null;
  return fast ?? viem.hashTypedData(p);
}

export class SellerSignatures {
  readonly address: string;
  private readonly issuer: OfferReceiptIssuer;
  private readonly offers = new Map<string, { at: number; offers: Promise<SignedOffer[]> }>();

  constructor(privateKey: `0x${string}`) {
    // What viem's account.signTypedData signs, byte for byte (RFC 6979, low s, v 27 or 28), through the native binding.
    const key = new SigningKey(privateKey);
    this.address = computeAddress(key.publicKey);
    this.issuer = createEIP712OfferReceiptIssuer(`did:pkh:eip155:1:${this.address}`, (p) =>
      Promise.resolve(signDigest(key, typedDataDigest(p)).serialized as `0x${string}`),
    );
  }

  /** Signed offers of `requirements` (v2 shapes, CAIP-2 networks) for `resourceUrl`, in their order. */
  offersFor(resourceUrl: string, requirements: readonly PaymentRequirements[]): Promise<SignedOffer[]> {
    const key = `${resourceUrl}|${JSON.stringify(requirements)}`;
    const kept = this.offers.get(key);
    if (kept && Date.now() - kept.at < REUSE_MS) return kept.offers;
    const offers = Promise.all(
      requirements.map((r, acceptIndex) =>
        this.issuer.issueOffer(resourceUrl, {
          acceptIndex,
          scheme: r.scheme,
          network: r.network,
          asset: r.asset,
          payTo: r.payTo,
          amount: r.amount,
          offerValiditySeconds: OFFER_VALIDITY_S,
        }),
      ),
    );
    if (this.offers.size >= 100) this.offers.clear();
    this.offers.set(key, { at: Date.now(), offers });
    offers.catch(() => this.offers.delete(key));
    return offers;
  }

  /** The receipt of a settled payment: the resource, the payer, the network (CAIP-2) and the settlement. */
  receipt(resourceUrl: string, payer: string, network: string, transaction: string): Promise<SignedReceipt> {
    return this.issuer.issueReceipt(resourceUrl, payer, network, transaction);
  }
}
