/**
 * A stock x402 v2 seller that declares the offer-receipt extension (@x402/extensions' createOfferReceiptExtension on
 * @x402/core's resource server): signed offers in its 402, a signed receipt in its PAYMENT-RESPONSE. EIP-712 with a
 * key of its own, or JWS (EdDSA) under a did:jwk kid. `receipt` bends what its issuer signs, to play a seller whose
 * receipt does not match its offer (still signed by its own key, through the stock issuer).
 */
import { generateKeyPairSync, sign } from "node:crypto";
import { Wallet } from "ethers";
import {
  type OfferReceiptIssuer,
  createEIP712OfferReceiptIssuer,
  createJWSOfferReceiptIssuer,
  createOfferReceiptExtension,
  declareOfferReceiptExtension,
} from "@x402/extensions/offer-receipt";
import { viemAccounts } from "../../src/chain/viem";
import type { SellerOptions, TestSeller } from "./sellerServer";
import { startV2Seller } from "./sellerV2";

export interface OfferReceiptOptions extends SellerOptions {
  format: "eip712" | "jws";
  /** What the receipt says instead of the truth (another payer, another transaction), or no receipt at all. */
  receipt?: { payer?: string; transaction?: string; omit?: boolean };
}

/** An issuer signing with a fresh key: EIP-712 (an Ethereum key) or JWS (Ed25519, its public key in a did:jwk kid). */
export function freshIssuer(format: "eip712" | "jws"): { issuer: OfferReceiptIssuer; signer: string } {
  if (format === "eip712") {
    const account = viemAccounts.privateKeyToAccount(Wallet.createRandom().privateKey as `0x${string}`);
    const kid = `did:pkh:eip155:8453:${account.address}`;
    return {
      issuer: createEIP712OfferReceiptIssuer(kid, (p) => account.signTypedData(p)),
      signer: account.address,
    };
  }
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const kid = `did:jwk:${Buffer.from(JSON.stringify(publicKey.export({ format: "jwk" }))).toString("base64url")}`;
  const jws = {
    kid,
    format: "jws" as const,
    algorithm: "EdDSA",
    sign: (bytes: Uint8Array) => Promise.resolve(sign(null, bytes, privateKey).toString("base64url")),
  };
  return { issuer: createJWSOfferReceiptIssuer(kid, jws), signer: kid };
}

export async function startOfferReceiptSeller(opts: OfferReceiptOptions): Promise<TestSeller & { signer: string }> {
  const { issuer: honest, signer } = freshIssuer(opts.format);
  const bent = opts.receipt;
  const issuer: OfferReceiptIssuer = {
    ...honest,
    issueOffer: (url, input) => honest.issueOffer(url, input),
    issueReceipt: (url, payer, net, tx) =>
      bent?.omit
        ? Promise.reject(new Error("this seller sends no receipt"))
        : honest.issueReceipt(url, bent?.payer ?? payer, net, bent?.transaction ?? tx),
  };
  const seller = await startV2Seller({
    ...opts,
    extensions: [createOfferReceiptExtension(issuer)],
    declared: declareOfferReceiptExtension({ includeTxHash: true }),
  });
  return { ...seller, signer };
}
