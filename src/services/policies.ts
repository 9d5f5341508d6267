/**
 * Spend policies: read from the agent's SpendPolicy contract (and cached for the payment path), changed only with the
 * owner's SetPolicy signature (policyUpdate.ts).
 */
import { fromBaseUnits } from "../amounts";
import { NO_EXTRA_LIMITS, type PolicyFields } from "../chain/typedData";
import {
  type AllowlistProof,
  EMPTY_ROOT,
  type EntryCaps,
  type EntryPayees,
  allowlistRoot,
  payeeOverlaps,
  proveMerchant,
} from "../policy/allowlist";
import { type PolicyView, type SetLimitsRequest } from "../schemas/limits";
import type { AgentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import { type ReadResults, readOf } from "../chain/contracts";
import type { Principal } from "../principal";
import { heldInChannels } from "../store/channels";
import { setPolicy } from "./policyUpdate";

/** What the contract's spending() view counts now in each window (0 for a window with no limit). */
export interface Spending {
  hour: bigint;
  paymentsThisHour: bigint;
  day: bigint;
  week: bigint;
  month: bigint;
  lifetime: bigint;
}

export interface OnchainPolicy extends PolicyFields {
  deployed: boolean;
  paused: boolean;
  spentToday: bigint;
  spending: Spending;
  lastUpdated: number | null;
  /** Who may authorise its payments: a key, or an OperatorSet of keys (null when not deployed). */
  operator: string | null;
  /** The authorisation epoch (pause, policy, operator and owner changes each start one): what a resume signs. */
  epoch: number;
}

/** An allowlist as the service keeps it: entries and their per-entry caps and payees (what its root commits to). */
export interface Allowlist {
  entries: string[];
  caps: EntryCaps;
  payees: EntryPayees;
}

const NO_SPENDING: Spending = { hour: 0n, paymentsThisHour: 0n, day: 0n, week: 0n, month: 0n, lifetime: 0n };
const EMPTY_ALLOWLIST: Allowlist = { entries: [], caps: {}, payees: {} };

const UNDEPLOYED: OnchainPolicy = {
  deployed: false,
  perTxLimit: 0n,
  dailyBudget: 0n,
  allowlistRoot: EMPTY_ROOT,
  approvalThreshold: 0n,
  ...NO_EXTRA_LIMITS,
  paused: false,
  spentToday: 0n,
  spending: NO_SPENDING,
  lastUpdated: null,
  operator: null,
  epoch: 0,
};

const HOUR = 3_600;
const DAY = 86_400;
/** The fixed UTC windows of the contract (aligned to the Unix epoch), their field and their length in seconds. */
export const WINDOWS = [
  { window: "hourly", budget: "hourlyBudget", spent: "hour", seconds: HOUR },
  { window: "daily", budget: "dailyBudget", spent: "day", seconds: DAY },
  { window: "weekly", budget: "weeklyBudget", spent: "week", seconds: 7 * DAY },
  { window: "monthly", budget: "monthlyBudget", spent: "month", seconds: 30 * DAY },
  { window: "lifetime", budget: "lifetimeBudget", spent: "lifetime", seconds: null },
] as const;

/** The windows a policy limits (daily always: its budget is required), each with its budget and what it counts now. */
export function limitedWindows(p: OnchainPolicy) {
  return WINDOWS.filter((w) => w.window === "daily" || p[w.budget] > 0n).map((w) => ({
    ...w,
    limit: p[w.budget],
    used: p.spending[w.spent],
  }));
}

const left = (limit: bigint, used: bigint) => (limit > used ? limit - used : 0n);

/** What the reads of PolicyService.policyReads answer (null where a read failed). */
export type PolicyReadResults = ReadResults<ReturnType<PolicyService["policyReads"]>>;

export class PolicyService {
  private readonly allowlistCache = new Map<string, Allowlist>();
  private readonly proofCache = new Map<string, AllowlistProof | null>();
  /** Deployed policies as last read, with the agent's policySeq at that time. */
  private readonly paymentCache = new Map<string, { policy: OnchainPolicy; seq: number }>();

  constructor(private readonly ctx: ServiceContext) {}

  /** The policy as the contract holds it now (the chain is the source of truth). */
  async onchain(agent: AgentDoc): Promise<OnchainPolicy> {
    return this.onchainAt(agent.policyAddress);
  }

  /** The policy at a policy contract's address, as the contract holds it now (one round trip: it sits on the payment path). */
  async onchainAt(policyAddress: string): Promise<OnchainPolicy> {
    return this.fromReads(policyAddress, await this.ctx.chain.readMany(this.policyReads(policyAddress)));
  }

  /** The reads onchainAt() makes, for a caller that adds its own to the same round trip (fromReads decodes them). */
  policyReads(policyAddress: string) {
    const contract = this.ctx.chain.policyAt(policyAddress, this.ctx.chain.provider);
    return [
      readOf(contract, "policy"),
      readOf(contract, "paused"),
      readOf(contract, "spentToday"),
      readOf(contract, "lastTimestamp", 0),
      readOf(contract, "spending"),
      readOf(contract, "operator"),
      readOf(contract, "epoch"),
    ] as const;
  }

  async fromReads(policyAddress: string, [policy, paused, spent, last, w, operator, epoch]: PolicyReadResults): Promise<OnchainPolicy> {
    if (policy === null || paused === null || spent === null || last === null || w === null || operator === null || epoch === null) {
      if (!(await this.ctx.chain.isDeployed(policyAddress))) return UNDEPLOYED;
      throw new Error(`could not read the policy at ${policyAddress}`);
    }
    return {
      deployed: true,
      perTxLimit: policy.perTxLimit,
      dailyBudget: policy.dailyBudget,
      allowlistRoot: policy.allowlistRoot,
      approvalThreshold: policy.approvalThreshold,
      hourlyBudget: policy.hourlyBudget,
      weeklyBudget: policy.weeklyBudget,
      monthlyBudget: policy.monthlyBudget,
      lifetimeBudget: policy.lifetimeBudget,
      maxPaymentsPerHour: policy.maxPaymentsPerHour,
      validUntil: policy.validUntil,
      maxSwapSlippageBps: policy.maxSwapSlippageBps,
      swapTwapSeconds: policy.swapTwapSeconds,
      minSwapRate: policy.minSwapRate,
      paused,
      spentToday: spent,
      spending: { hour: w.hour, paymentsThisHour: w.paymentsThisHour, day: w.day, week: w.week, month: w.month, lifetime: w.lifetime },
      lastUpdated: Number(last),
      operator,
      epoch: Number(epoch),
    };
  }

  /**
   * The policy for the payment path without a chain read when nothing changed: cached per agent and read again once
   * the agent's `policySeq` moved (a pause or policy update relayed by any instance, or a PolicyUpdated, PausedSet,
   * OperatorSet or OwnerSet any instance's indexer recorded; policyChanged) or when `fresh`. The mark is the one on
   * `agent` as the caller read it (the payment path's document, read once per request). The contract's simulation
   * stays the authority: the payment path reads afresh before any refusal that a stale copy could have caused.
   */
  async forPayment(agent: AgentDoc, fresh = false): Promise<{ policy: OnchainPolicy; cached: boolean }> {
    const seq = agent.policySeq ?? 0;
    const hit = this.paymentCache.get(agent.address);
    if (!fresh && hit && hit.seq === seq) return { policy: hit.policy, cached: true };
    const policy = await this.onchain(agent);
    if (policy.deployed) {
      if (this.paymentCache.size >= 10_000) this.paymentCache.clear();
      this.paymentCache.set(agent.address, { policy, seq });
    } else this.paymentCache.delete(agent.address);
    return { policy, cached: false };
  }

  /** The payment path's copy of the agent's policy, whatever its policySeq (undefined: none kept). */
  lastRead(agentAddress: string): OnchainPolicy | undefined {
    return this.paymentCache.get(agentAddress)?.policy;
  }

  /** Drops the payment path's copy (a payment failed on-chain: the next one reads the policy again). */
  forget(agent: AgentDoc): void {
    this.paymentCache.delete(agent.address);
  }

  /** The allowlist entries behind an on-chain root (the chain stores only the root). */
  async allowlistFor(root: string): Promise<string[]> {
    return (await this.allowlistOf(root)).entries;
  }

  /** Entries, caps and payees behind an on-chain root ([entry, cap, payee] leaves). */
  async allowlistOf(root: string): Promise<Allowlist> {
    if (root === EMPTY_ROOT) return EMPTY_ALLOWLIST;
    const cached = this.allowlistCache.get(root);
    if (cached) return cached;
    const doc = await this.ctx.store.allowlists.findOne({ root });
    if (!doc) return EMPTY_ALLOWLIST;
    const caps: EntryCaps = Object.fromEntries(Object.entries(doc.caps ?? {}).map(([e, c]) => [e, BigInt(c)]));
    const payees: EntryPayees = doc.payees ?? {};
    // Content-addressed (the root is the hash of the entries, caps and payees), so a cached answer can never be stale,
    // and a database edit of a payee or cap only makes the proof fail on-chain.
    if (allowlistRoot(doc.entries, caps, payees) !== root) throw new Error(`stored allowlist does not hash to ${root}`);
    const list: Allowlist = { entries: doc.entries, caps, payees };
    if (this.allowlistCache.size > 10_000) this.allowlistCache.clear();
    this.allowlistCache.set(root, list);
    return list;
  }

  /**
   * The leaf (with its cap) and proof that admit `merchant` under `root`, or null when none does. Kept per root and
   * merchant: the root commits to the list, so the answer never changes, and building the Merkle tree for every
   * payment was a measurable share of a payment's CPU.
   */
  async prove(root: string, merchant: string): Promise<AllowlistProof | null> {
    const key = `${root}|${merchant}`;
    const known = this.proofCache.get(key);
    if (known !== undefined) return known;
    const list = await this.allowlistOf(root);
    const proof = proveMerchant(list.entries, merchant, list.caps, list.payees);
    // A root whose list this store does not have (yet) answers "none", but is not kept.
    if (list === EMPTY_ALLOWLIST && root !== EMPTY_ROOT) return proof;
    if (this.proofCache.size > 10_000) this.proofCache.clear();
    this.proofCache.set(key, proof);
    return proof;
  }

  async view(agent: AgentDoc): Promise<PolicyView> {
    const p = await this.onchain(agent);
    const remaining = p.dailyBudget > p.spentToday ? p.dailyBudget - p.spentToday : 0n;
    const list = await this.allowlistOf(p.allowlistRoot);
    const capped = Object.entries(list.caps).filter(([, c]) => c > 0n);
    const contract = this.ctx.chain.policyAt(agent.policyAddress, this.ctx.chain.provider);
    const entrySpent =
      p.deployed && capped.length ? await this.ctx.chain.readMany(capped.map(([e]) => readOf(contract, "entrySpentToday", e))) : [];
    const now = Math.floor(Date.now() / 1000);
    // Money sent before deployment sits at an address whose owner is not fixed on-chain yet: say so.
    const early = p.deployed ? 0n : await this.ctx.chain.usdc.balanceOf(agent.address).catch(() => 0n);
    const warnings = [
      ...(early > 0n
        ? [
            `This address already holds ${fromBaseUnits(early)} USDC but its policy is not deployed: until the owner sets the policy, nothing on-chain says who owns it. Fund an agent only after its policy is deployed.`,
          ]
        : []),
      // Lists signed before the contract refused these (the signed-list version refuses them outright).
      ...payeeOverlaps(list.entries, list.payees).map(
        ([open, pinned]) =>
          `${pinned} is pinned to a payee, but ${open} also admits it with any payee: whoever holds the server's keys can pay anyone "as ${pinned}" under ${open}. Pin ${open} too, or remove it.`,
      ),
    ];
    return {
      address: agent.address,
      // These services are the agent's network's (src/services/networks.ts).
      network: this.ctx.config.networkName,
      perTxLimit: fromBaseUnits(p.perTxLimit),
      dailyBudget: fromBaseUnits(p.dailyBudget),
      allowlist: await this.allowlistFor(p.allowlistRoot),
      approvalThreshold: fromBaseUnits(p.approvalThreshold),
      policyContract: agent.policyAddress,
      deployed: p.deployed,
      paused: p.paused,
      ownerAddress: agent.ownerAddress,
      allowlistRoot: p.allowlistRoot,
      spentToday: fromBaseUnits(p.spentToday),
      remainingDailyBudget: fromBaseUnits(remaining),
      heldInChannels: fromBaseUnits(await heldInChannels(this.ctx.store, agent.address)),
      lastUpdated: p.lastUpdated,
      hourlyBudget: fromBaseUnits(p.hourlyBudget),
      weeklyBudget: fromBaseUnits(p.weeklyBudget),
      monthlyBudget: fromBaseUnits(p.monthlyBudget),
      lifetimeBudget: fromBaseUnits(p.lifetimeBudget),
      maxPaymentsPerHour: Number(p.maxPaymentsPerHour),
      validUntil: Number(p.validUntil),
      maxSwapSlippageBps: Number(p.maxSwapSlippageBps),
      swapTwapSeconds: Number(p.swapTwapSeconds),
      merchantCaps: Object.fromEntries(capped.map(([e, c]) => [e, fromBaseUnits(c)])),
      payees: { ...list.payees },
      requireSignedOffer: await this.signedOffers(agent, p.allowlistRoot),
      minSwapRate: fromBaseUnits(p.minSwapRate),
      epoch: p.epoch,
      ...(warnings.length ? { warning: warnings.join(" ") } : {}),
      merchantRemainingToday: Object.fromEntries(capped.map(([e, c], i) => [e, fromBaseUnits(left(c, entrySpent[i] ?? 0n))])),
      windows: limitedWindows(p).map((w) => ({
        window: w.window,
        budget: fromBaseUnits(w.limit),
        spent: fromBaseUnits(w.used),
        remaining: fromBaseUnits(left(w.limit, w.used)),
        resetsAt: w.seconds === null ? null : (Math.floor(now / w.seconds) + 1) * w.seconds,
      })),
      velocity: {
        maxPaymentsPerHour: Number(p.maxPaymentsPerHour),
        paymentsThisHour: Number(p.spending.paymentsThisHour),
        remaining: p.maxPaymentsPerHour > 0n ? Number(left(p.maxPaymentsPerHour, p.spending.paymentsThisHour)) : null,
        resetsAt: (Math.floor(now / HOUR) + 1) * HOUR,
      },
    };
  }

  /**
   * The entries whose sellers must sign their offers, as the owner signed them with the policy in force (`root`): the
   * service's record of her last SetPolicy, when it is the policy the chain holds.
   */
  async signedOffers(agent: AgentDoc, root: string): Promise<string[]> {
    const doc = await this.ctx.store.policies.findOne(
      { agentAddress: agent.address },
      { projection: { allowlistRoot: 1, signedOffers: 1 } },
    );
    return doc?.allowlistRoot === root ? (doc.signedOffers ?? []) : [];
  }

  /** Deploys the agent's policy (first time) or updates it, with the owner's SetPolicy signature over every field. */
  set(principal: Principal, agent: AgentDoc, input: SetLimitsRequest) {
    return setPolicy(this.ctx, this, principal, agent, input);
  }
}
