/**
 * The SetPolicy (version 4) an owner signs, built from what POST /limits carries (decimal USDC strings, the allowlist
 * and its per-entry settings). One builder for the service, the dashboard, the owner CLI and the tests, so the
 * message the owner's wallet shows, the one the service checks and the one the contract verifies are the same bytes.
 */
import { getAddress } from "ethers";
import { toBaseUnits } from "../amounts";
import type { MerchantFields, SignedPolicyFields } from "../chain/typedData";
import {
  ANY_PAYEE,
  MAX_MERCHANTS,
  allowlistRoot,
  merchantsOf,
  normalizeAllowlist,
  normalizeAllowlistEntry,
  payeeOverlaps,
} from "./allowlist";

/** The largest per-entry cap the contract keeps (64 bits of base units). */
const MAX_CAP = (1n << 64n) - 1n;

/** The policy part of a POST /limits body (amounts as decimal USDC strings; absent optional fields: no such limit). */
export interface PolicyRequest {
  perTxLimit: string;
  dailyBudget: string;
  allowlist: readonly string[];
  approvalThreshold: string;
  hourlyBudget?: string;
  weeklyBudget?: string;
  monthlyBudget?: string;
  lifetimeBudget?: string;
  maxPaymentsPerHour?: number;
  validUntil?: number;
  maxSwapSlippageBps?: number;
  swapTwapSeconds?: number;
  minSwapRate?: string;
  merchantCaps?: Readonly<Record<string, string>>;
  payees?: Readonly<Record<string, string>>;
  requireSignedOffer?: readonly string[];
}

/** A request no owner should sign (the contract, or the service, would refuse it): the message says why. */
export class PolicyRequestError extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
    this.name = "PolicyRequestError";
  }
}

/** The signed policy and what the service keeps beside it: the normalised entries and their per-entry settings. */
export interface BuiltPolicy {
  policy: SignedPolicyFields;
  entries: string[];
  /** Capped entries only (base units). */
  caps: Record<string, bigint>;
  /** Pinned entries only (checksummed). */
  payees: Record<string, string>;
  /** Entries whose sellers must sign their offers. */
  signedOffers: string[];
  /** The root the contract derives from policy.merchants. */
  root: string;
}

/**
 * Checks a policy request and builds the SetPolicy it asks the owner to sign. Throws PolicyRequestError for entries
 * that name no host, per-entry settings keyed by an entry not in the allowlist, more than MAX_MERCHANTS entries, and an
 * entry with any payee that admits a pinned one (it would undo the pin: the contract refuses that list too).
 */
export function buildSignedPolicy(input: PolicyRequest): BuiltPolicy {
  const { entries, invalid } = normalizeAllowlist(input.allowlist);
  if (invalid.length) throw new PolicyRequestError(`Not host names: ${invalid.join(", ")}`, { invalidAllowlistEntries: invalid });
  if (entries.length > MAX_MERCHANTS) {
    throw new PolicyRequestError(`The allowlist has ${entries.length} entries: at most ${MAX_MERCHANTS} can be signed.`, {
      field: "allowlist",
      max: MAX_MERCHANTS,
    });
  }
  const caps = perEntry(entries, input.merchantCaps ?? {}, "merchantCaps", "unknownMerchantCaps", (amount) => {
    const units = toBaseUnits(amount);
    if (units > MAX_CAP)
      throw new PolicyRequestError(`A daily cap of ${amount} USDC is more than the contract keeps.`, { field: "merchantCaps" });
    return units > 0n ? units : null;
  });
  const payees = perEntry(entries, input.payees ?? {}, "payees", "unknownPayees", (raw) => {
    let address: string;
    try {
      address = getAddress(raw);
    } catch {
      throw new PolicyRequestError(`Not an address: ${raw}`, { field: "payees" });
    }
    return address !== ANY_PAYEE ? address : null;
  });
  const flagged = Object.fromEntries((input.requireSignedOffer ?? []).map((e) => [e, "true"]));
  const signedOffers = Object.keys(perEntry(entries, flagged, "requireSignedOffer", "unknownRequireSignedOffer", () => true as const));
  const overlaps = payeeOverlaps(entries, payees);
  if (overlaps.length) {
    throw new PolicyRequestError(
      overlaps
        .map(
          ([open, pinned]) =>
            `"${open}" (any payee) also admits "${pinned}", which is pinned to ${payees[pinned]}: a payment as ${pinned} could be proved with "${open}" and pay anyone. Pin "${open}" too, narrow it, or remove it.`,
        )
        .join(" "),
      { overlappingEntries: overlaps.map(([open, pinned]) => ({ anyPayee: open, pinned })) },
    );
  }
  const units = (v: string | undefined) => (v === undefined ? 0n : toBaseUnits(v));
  const merchants: MerchantFields[] = merchantsOf(entries, caps, payees, signedOffers);
  const policy: SignedPolicyFields = {
    perTxLimit: toBaseUnits(input.perTxLimit),
    dailyBudget: toBaseUnits(input.dailyBudget),
    merchants,
    approvalThreshold: toBaseUnits(input.approvalThreshold),
    hourlyBudget: units(input.hourlyBudget),
    weeklyBudget: units(input.weeklyBudget),
    monthlyBudget: units(input.monthlyBudget),
    lifetimeBudget: units(input.lifetimeBudget),
    maxPaymentsPerHour: BigInt(input.maxPaymentsPerHour ?? 0),
    validUntil: BigInt(input.validUntil ?? 0),
    maxSwapSlippageBps: BigInt(input.maxSwapSlippageBps ?? 0),
    swapTwapSeconds: BigInt(input.swapTwapSeconds ?? 0),
    minSwapRate: units(input.minSwapRate),
  };
  return { policy, entries, caps, payees, signedOffers, root: allowlistRoot(entries, caps, payees) };
}

/**
 * A per-entry setting (`field`) keyed by allowlist entry (normalised here), each value as `read` gives it (null:
 * dropped); PolicyRequestError naming every key that is no entry of the allowlist (in `details[unknownKey]`).
 */
function perEntry<T>(
  entries: readonly string[],
  input: Readonly<Record<string, string>>,
  field: string,
  unknownKey: string,
  read: (value: string) => T | null,
): Record<string, T> {
  const out: Record<string, T> = {};
  const unknown: string[] = [];
  for (const [raw, value] of Object.entries(input)) {
    const entry = normalizeAllowlistEntry(raw);
    if (entry === null || !entries.includes(entry)) unknown.push(raw);
    else {
      const v = read(value);
      if (v !== null) out[entry] = v;
    }
  }
  if (unknown.length)
    throw new PolicyRequestError(`${field} names entries that are not in allowlist: ${unknown.join(", ")}`, { [unknownKey]: unknown });
  return out;
}
