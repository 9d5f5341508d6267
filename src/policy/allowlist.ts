/**
 * Merchant allowlist: normalisation, matching, the entries as the owner signs them (SetPolicy's Merchant[]) and the
 * Merkle root the SpendPolicy contract derives from them. Entries are normalised host names, "*.domain" (any subdomain
 * of domain) or "*" (any merchant). Leaves are [entry, dailyCap, payee] (["string","uint256","address"], cap in USDC
 * base units, 0 = no cap of its own; payee the only address a payment under that entry may pay, 0 = any).
 */
import { domainToASCII } from "node:url";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { getAddress } from "ethers";
import type { MerchantFields } from "../chain/typedData";

export const EMPTY_ROOT = "0x" + "00".repeat(32);

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Normalises a host name: trim, lower case, IDNA to ASCII, no trailing dot. Returns null when it is not a host. */
export function normalizeHost(input: string): string | null {
  let host = input.trim().toLowerCase();
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (!host || host.length > 253) return null;
  const ascii = domainToASCII(host);
  if (!ascii) return null;
  const labels = ascii.split(".");
  if (!labels.every((l) => LABEL.test(l))) return null;
  return ascii;
}

/**
 * Normalises one allowlist entry. Accepts a bare host, a URL (scheme, port and path are dropped), "*.host" or "*".
 * Returns null when the entry names no host.
 */
export function normalizeAllowlistEntry(input: string): string | null {
  let entry = input.trim().toLowerCase();
  if (entry === "*") return "*";
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(entry)) {
    try {
      entry = new URL(entry).hostname;
    } catch {
      return null;
    }
  } else {
    entry = entry.split(/[/?#]/)[0].replace(/:\d*$/, "");
  }
  if (entry.startsWith("*.")) {
    const base = normalizeHost(entry.slice(2));
    return base ? `*.${base}` : null;
  }
  return normalizeHost(entry);
}

export interface NormalizedAllowlist {
  entries: string[];
  invalid: string[];
}

/** Normalises every entry, drops duplicates (first occurrence wins) and reports the entries that name no host. */
export function normalizeAllowlist(entries: readonly string[]): NormalizedAllowlist {
  const out: string[] = [];
  const invalid: string[] = [];
  for (const raw of entries) {
    const e = normalizeAllowlistEntry(raw);
    if (e === null) invalid.push(raw);
    else if (!out.includes(e)) out.push(e);
  }
  return { entries: out, invalid };
}

/** Per-entry daily caps in USDC base units, keyed by normalised entry (absent or 0: no cap of its own). */
export type EntryCaps = Readonly<Record<string, bigint>>;

/** Per-entry payees (addresses), keyed by normalised entry (absent or the zero address: any payee). */
export type EntryPayees = Readonly<Record<string, string>>;

export const ANY_PAYEE = "0x0000000000000000000000000000000000000000";

/** The payee of an entry as its leaf holds it (checksummed; the zero address for "any"). */
export function payeeOf(payees: EntryPayees, entry: string): string {
  const p = payees[entry];
  return p ? getAddress(p) : ANY_PAYEE;
}

function tree(entries: readonly string[], caps: EntryCaps, payees: EntryPayees): StandardMerkleTree<string[]> {
  return StandardMerkleTree.of(
    entries.map((e) => [e, (caps[e] ?? 0n).toString(), payeeOf(payees, e)]),
    ["string", "uint256", "address"],
  );
}

/**
 * The root the contract derives from the signed entries (SpendPolicyUpdates): StandardMerkleTree over [entry, dailyCap,
 * payee] leaves (["string","uint256","address"]); the empty list has root 0x00…00. The leaves' order does not matter
 * (the tree sorts their hashes).
 */
export function allowlistRoot(normalizedEntries: readonly string[], caps: EntryCaps = {}, payees: EntryPayees = {}): string {
  return normalizedEntries.length === 0 ? EMPTY_ROOT : tree(normalizedEntries, caps, payees).root;
}

/** The most entries a signed policy may have (SpendPolicyUpdates.MAX_MERCHANTS). */
export const MAX_MERCHANTS = 64;

/**
 * The allowlist as SetPolicy (version 4) signs it: the normalised entries in byte order (the order the contract
 * requires: each entry once), each with its daily cap (base units, 0: none), its payee (the zero address: any) and
 * whether the service must see a seller's signed offer before paying under it. The contract derives from exactly these
 * the root allowlistRoot(entries, caps, "v3", payees) computes.
 */
export function merchantsOf(
  normalizedEntries: readonly string[],
  caps: EntryCaps = {},
  payees: EntryPayees = {},
  signedOffers: readonly string[] = [],
): MerchantFields[] {
  return [...normalizedEntries]
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((entry) => ({
      entry,
      dailyCap: caps[entry] ?? 0n,
      payee: payeeOf(payees, entry),
      requireSignedOffer: signedOffers.includes(entry),
    }));
}

/**
 * The pairs [open, pinned] where an entry with any payee admits an entry pinned to a payee (a payment "as" the pinned
 * merchant could be proved with the open leaf and pay anyone): refused when a policy is built, by the service, the
 * dashboard, the owner CLI and the contract (SpendPolicyMerchantOverlap), which all apply this rule.
 */
export function payeeOverlaps(normalizedEntries: readonly string[], payees: EntryPayees = {}): [string, string][] {
  const pinned = normalizedEntries.filter((e) => payeeOf(payees, e) !== ANY_PAYEE);
  return normalizedEntries
    .filter((e) => e.startsWith("*") && payeeOf(payees, e) === ANY_PAYEE)
    .flatMap((open) => pinned.filter((p) => leafMatches(open, p)).map((p) => [open, p] as [string, string]));
}

/** Whether an allowlist leaf admits a normalised merchant host (the contract applies the same rule). */
export function leafMatches(leaf: string, merchant: string): boolean {
  if (!merchant) return false;
  if (leaf === "*") return true;
  if (leaf.startsWith("*.")) return merchant.endsWith(leaf.slice(1)) && merchant.length > leaf.length - 1;
  return leaf === merchant;
}

/** The most specific entry that admits a normalised merchant (the leaf a payment to it is proved with), or null. */
export function admittingEntry(normalizedEntries: readonly string[], merchant: string): string | null {
  const matches = normalizedEntries.filter((leaf) => leafMatches(leaf, merchant));
  if (matches.length === 0) return null;
  matches.sort((a, b) => specificity(b) - specificity(a));
  return matches[0];
}

export interface AllowlistProof {
  leaf: string;
  /** The leaf's daily cap (base units; 0: none): the Leaf's dailyCap. */
  cap: bigint;
  /** The leaf's payee (checksummed; the zero address: any payee). */
  payee: string;
  proof: string[];
}

/** What a refused merchant is recorded with: no leaf, no cap, no payee, no proof. */
export const NO_LEAF: AllowlistProof = { leaf: "", cap: 0n, payee: ANY_PAYEE, proof: [] };

/** The ISpendPolicy.Leaf struct of a proof (authorizePayment's and checkPayment's `leaf`). */
export const leafStruct = (p: AllowlistProof) => ({ entry: p.leaf, dailyCap: p.cap, payee: p.payee });

/** Whether the leaf lets a payment pay `payTo` (its payee is "any", or that address). */
export function payeeAllowed(p: AllowlistProof, payTo: string): boolean {
  return p.payee === ANY_PAYEE || p.payee.toLowerCase() === payTo.toLowerCase();
}

/**
 * The most specific leaf that admits the merchant and its Merkle proof, or null when no leaf does.
 * Exact leaves win over wildcards so that the event trail names the narrowest rule, and the narrowest entry's cap
 * is the one that applies.
 */
export function proveMerchant(
  normalizedEntries: readonly string[],
  merchant: string,
  caps: EntryCaps = {},
  payees: EntryPayees = {},
): AllowlistProof | null {
  const leaf = admittingEntry(normalizedEntries, merchant);
  if (leaf === null) return null;
  const t = tree(normalizedEntries, caps, payees);
  for (const [i, value] of t.entries()) {
    if (value[0] === leaf) return { leaf, cap: BigInt(value[1]), payee: getAddress(value[2]), proof: t.getProof(i) };
  }
  return null;
}

function specificity(leaf: string): number {
  if (leaf === "*") return 0;
  if (leaf.startsWith("*.")) return leaf.length;
  return 1000 + leaf.length;
}
