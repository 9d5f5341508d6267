/**
 * Merchant allowlist: normalisation, matching and the Merkle root the SpendPolicy contract stores.
 * Entries are normalised host names, "*.domain" (any subdomain of domain) or "*" (any merchant). Leaves are
 * [entry, dailyCap] (["string","uint256"], cap in USDC base units, 0 = no cap of its own); roots signed before caps
 * existed ("v1") have [entry] leaves (["string"]), and the contract accepts those too, with no cap.
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

/** Per-entry daily caps in USDC base units, keyed by normalised entry (absent or 0: no cap of its own). */
export type EntryCaps = Readonly<Record<string, bigint>>;

/** "v2": [entry, dailyCap] leaves; "v1": [entry] leaves (roots signed before per-entry caps). */
export type LeafForm = "v1" | "v2";

function tree(entries: readonly string[], caps: EntryCaps, form: LeafForm): StandardMerkleTree<string[]> {
  if (form === "v1")
    return StandardMerkleTree.of(
      entries.map((e) => [e]),
      ["string"],
    );
  return StandardMerkleTree.of(
    entries.map((e) => [e, (caps[e] ?? 0n).toString()]),
    ["string", "uint256"],
  );
}

/**
 * The root the contract stores: StandardMerkleTree over [entry, dailyCap] leaves (["string","uint256"]), or over
 * [entry] leaves (["string"]) for form "v1"; the empty list has root 0x00…00.
 */
export function allowlistRoot(normalizedEntries: readonly string[], caps: EntryCaps = {}, form: LeafForm = "v2"): string {
  return normalizedEntries.length === 0 ? EMPTY_ROOT : tree(normalizedEntries, caps, form).root;
}

/** Which leaf form `root` was built with from these entries and caps, or null when it is neither. */
export function leafFormOf(root: string, normalizedEntries: readonly string[], caps: EntryCaps = {}): LeafForm | null {
  if (allowlistRoot(normalizedEntries, caps, "v2") === root) return "v2";
  if (Object.values(caps).every((c) => c === 0n) && allowlistRoot(normalizedEntries, {}, "v1") === root) return "v1";
  return null;
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
  /** The leaf's daily cap (base units; 0: none, and always 0 for a v1 leaf): authorizePayment's leafDailyCap. */
  cap: bigint;
  proof: string[];
}

/** What a refused merchant is recorded with: no leaf, no cap, no proof. */
export const NO_LEAF: AllowlistProof = { leaf: "", cap: 0n, proof: [] };

/**
 * The most specific leaf that admits the merchant and its Merkle proof, or null when no leaf does.
 * Exact leaves win over wildcards so that the event trail names the narrowest rule, and the narrowest entry's cap
 * is the one that applies.
 */
export function proveMerchant(
  normalizedEntries: readonly string[],
  merchant: string,
  caps: EntryCaps = {},
  form: LeafForm = "v2",
): AllowlistProof | null {
  const matches = normalizedEntries.filter((leaf) => leafMatches(leaf, merchant));
  if (matches.length === 0) return null;
  matches.sort((a, b) => specificity(b) - specificity(a));
  const leaf = matches[0];
  const t = tree(normalizedEntries, caps, form);
  for (const [i, value] of t.entries()) {
    if (value[0] === leaf) return { leaf, cap: form === "v1" ? 0n : BigInt(value[1]), proof: t.getProof(i) };
  }
  return null;
}

function specificity(leaf: string): number {
  if (leaf === "*") return 0;
  if (leaf.startsWith("*.")) return leaf.length;
  return 1000 + leaf.length;
}
