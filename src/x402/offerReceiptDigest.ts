/**
 * The EIP-712 digests of x402 offer-receipt offers and receipts, as @x402/extensions' hashOfferTypedData and
 * hashReceiptTypedData compute them (its domains and types: "x402 offer" / "x402 receipt", version 1, chain id 1), with
 * the domain separators and type hashes computed once: viem's hashTypedData takes about 300 µs each, this about 40.
 * Only payloads whose fields have the types the extension signs are hashed here (strings, and non-negative integers:
 * safe numbers or uint256 bigints); for any other, null, and the caller asks the extension (test/x402/offers.test.ts
 * holds the two equal).
 */
import { AbiCoder, id, keccak256 } from "ethers";
import { keccakHex } from "../chain/keccak";

interface Field {
  name: string;
  type: "uint256" | "string";
}

/** The extension's OFFER_TYPES and RECEIPT_TYPES, in their order. */
const OFFER: Field[] = [
  { name: "version", type: "uint256" },
  { name: "resourceUrl", type: "string" },
  { name: "scheme", type: "string" },
  { name: "network", type: "string" },
  { name: "asset", type: "string" },
  { name: "payTo", type: "string" },
  { name: "amount", type: "string" },
  { name: "validUntil", type: "uint256" },
];
const RECEIPT: Field[] = [
  { name: "version", type: "uint256" },
  { name: "network", type: "string" },
  { name: "resourceUrl", type: "string" },
  { name: "payer", type: "string" },
  { name: "issuedAt", type: "uint256" },
  { name: "transaction", type: "string" },
];

const abi = AbiCoder.defaultAbiCoder();

/**
 * keccak256 of short strings seen again and again (a seller's resource URL, network, asset and payee; an agent's
 * address): a pure function's answers, kept up to a bound and forgotten together when it is reached.
 */
const stringHashes = new Map<string, string>();
const STRING_HASHES_MAX = 4_096;
const STRING_HASHED_MAX_CHARS = 256;

function stringHash(v: string): string {
  const kept = stringHashes.get(v);
  if (kept) return kept;
  // UTF-8 as viem's toHex writes it (TextEncoder: a lone surrogate becomes U+FFFD, as in Buffer's encoding).
  const h = keccak256(Buffer.from(v, "utf8")).slice(2);
  if (v.length <= STRING_HASHED_MAX_CHARS) {
    if (stringHashes.size >= STRING_HASHES_MAX) stringHashes.clear();
    stringHashes.set(v, h);
  }
  return h;
}

const MAX_UINT256 = 1n << 256n;
const typeString = (name: string, fields: Field[]) => `${name}(${fields.map((f) => `${f.type} ${f.name}`).join(",")})`;
const domainSeparator = (name: string) =>
  keccak256(
    abi.encode(
      ["bytes32", "bytes32", "bytes32", "uint256"],
      [id("EIP712Domain(string name,string version,uint256 chainId)"), id(name), id("1"), 1],
    ),
  );

function digester(primaryType: string, domainName: string, fields: Field[]): (payload: unknown) => string | null {
  const typeHash = id(typeString(primaryType, fields));
  const prefix = `0x1901${domainSeparator(domainName).slice(2)}`;
  return (payload) => {
    if (typeof payload !== "object" || payload === null) return null;
    const o = payload as Record<string, unknown>;
    let words = typeHash.slice(2);
    for (const f of fields) {
      const v = o[f.name];
      if (f.type === "string") {
        if (typeof v !== "string") return null;
        words += stringHash(v);
      } else {
        // A number (the payload's JSON) or a bigint (the typed data's message, as the issuer hands it to its signer).
        const ok = typeof v === "number" ? Number.isSafeInteger(v) && v >= 0 : typeof v === "bigint" && v >= 0n && v < MAX_UINT256;
        if (!ok) return null;
        words += (v as number | bigint).toString(16).padStart(64, "0");
      }
    }
    return keccakHex(`${prefix}${keccakHex(`0x${words}`).slice(2)}`);
  };
}

/** The typed data's types and domain for which offerDigest and receiptDigest hold, as JSON, by primary type. */
export const DIGESTED: Record<string, { types: string; domain: string }> = {
  Offer: { types: JSON.stringify({ Offer: OFFER }), domain: JSON.stringify({ name: "x402 offer", version: "1", chainId: 1 }) },
  Receipt: { types: JSON.stringify({ Receipt: RECEIPT }), domain: JSON.stringify({ name: "x402 receipt", version: "1", chainId: 1 }) },
};

/** hashOfferTypedData(payload), or null for a payload whose fields it does not take as the extension types them. */
export const offerDigest = digester("Offer", "x402 offer", OFFER);
/** hashReceiptTypedData(payload), or null likewise. */
export const receiptDigest = digester("Receipt", "x402 receipt", RECEIPT);
