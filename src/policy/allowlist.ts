/**
 * Merchant allowlist: normalisation, matching and the Merkle root the SpendPolicy contract stores.
 * Leaves are normalised host names, "*.domain" (any subdomain of domain) or "*" (any merchant).
 */
import { domainToASCII } from "node:url";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";

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

function tree(entries: readonly string[]): StandardMerkleTree<[string]> {
  return StandardMerkleTree.of(
    entries.map((e) => [e] as [string]),
    ["string"],
  );
}

/** The root the contract stores: StandardMerkleTree over ["string"] leaves; the empty list has root 0x00…00. */
export function allowlistRoot(normalizedEntries: readonly string[]): string {
  return normalizedEntries.length === 0 ? EMPTY_ROOT : tree(normalizedEntries).root;
}

/** Whether an allowlist leaf admits a normalised merchant host (the contract applies the same rule). */
export function leafMatches(leaf: string, merchant: string): boolean {
  if (!merchant) return false;
  if (leaf === "*") return true;
  if (leaf.startsWith("*.")) return merchant.endsWith(leaf.slice(1)) && merchant.length > leaf.length - 1;
  return leaf === merchant;
}

export interface AllowlistProof {
  leaf: string;
  proof: string[];
}

/**
 * The most specific leaf that admits the merchant and its Merkle proof, or null when no leaf does.
 * Exact leaves win over wildcards so that the event trail names the narrowest rule.
 */
export function proveMerchant(normalizedEntries: readonly string[], merchant: string): AllowlistProof | null {
  const matches = normalizedEntries.filter((leaf) => leafMatches(leaf, merchant));
  if (matches.length === 0) return null;
  matches.sort((a, b) => specificity(b) - specificity(a));
  const leaf = matches[0];
  const t = tree(normalizedEntries);
  for (const [i, value] of t.entries()) {
    if (value[0] === leaf) return { leaf, proof: t.getProof(i) };
  }
  return null;
}

function specificity(leaf: string): number {
  if (leaf === "*") return 0;
  if (leaf.startsWith("*.")) return leaf.length;
  return 1000 + leaf.length;
}
