/**
 * The policy decision, in one place, for pay, approve and verify_merchant: the on-chain policy, the allowlist entry
 * and proof that admit the merchant, the contract's simulation of the amount, and (beside the simulation, in the same
 * round trip's time) whether the wallet must swap to pay it. Nothing here sends a transaction or contacts a seller.
 */
import { bind, readOf } from "../chain/contracts";
import { type CheckWithBalance, PolicyOps } from "../chain/policyOps";
import { Decision, type OnchainReasonName } from "../chain/reasons";
import { AppError, appError, conflict, unavailable } from "../errors";
import { ANY_PAYEE, type AllowlistProof, NO_LEAF, payeeAllowed } from "../policy/allowlist";
import { BLOCKED_RECORD_PAY_TO } from "../chain/policyOps";
import type { AgentDoc } from "../store/documents";
import type { ServiceContext } from "../services/context";
import type { OnchainPolicy, PolicyService } from "../services/policies";
import type { SwapCheck, SwapService } from "./swap";

/** The allowlist stage, before any seller is contacted. */
export type Admission =
  | { status: "no_policy"; policy: OnchainPolicy }
  | { status: "not_allowed"; policy: OnchainPolicy }
  /** `cached`: the policy came from the payment path's cache (read again before any refusal it could cause). */
  | { status: "admitted"; policy: OnchainPolicy; proof: AllowlistProof; cached: boolean };

/**
 * What the policy decides for an amount. `swap` runs beside the simulation and never rejects unobserved; `usdc` is the
 * wallet's USDC as the decision read it (null when it did not), and never rejects.
 */
export type PolicyDecision =
  | {
      status: "allow" | "requires_approval";
      policy: OnchainPolicy;
      proof: AllowlistProof;
      swap: Promise<SwapCheck>;
      usdc: Promise<bigint | null>;
    }
  | { status: "block"; reason: OnchainReasonName | "blocked"; policy: OnchainPolicy; proof: AllowlistProof };

/** The 422 answered for an agent whose owner has not deployed a policy yet. */
export function noPolicyError(agent: AgentDoc): AppError {
  return appError("no_policy", `Agent ${agent.address} has no spend policy yet: its owner sets one at the activation link.`);
}

/**
 * The 409 answered for an agent whose owner set another operator on-chain (SetOperator): every authorisation or
 * on-chain record this service sent would revert at the owner's gas cost, and retrying never helps.
 */
export function foreignOperatorError(agent: AgentDoc, operator: string, ours: string): AppError {
  return conflict(
    `Agent ${agent.address}'s owner set another operator on-chain (${operator}): this service can no longer authorise its payments, and nothing was signed or paid. Do not retry; to undo it, the owner signs SetOperator back to the service's operator ${ours} and relays it on the agent's contract (docs/owners.md, "How an owner approves": Operator).`,
    { operator, serviceOperator: ours },
  );
}

export class PolicyDecisions {
  private readonly ops: PolicyOps;
  /**
   * Operator contracts seen to count this instance's key in (a "no" is asked again: it is the rare path). Forgotten
   * when a payment fails (forget): a key taken out of the set then costs one reverted authorisation, not one per retry.
   */
  private readonly ourOperatorSets = new Set<string>();
  /** The entries requiring signed offers, by agent and the signed timestamp of the policy in force (never changes). */
  private readonly signedOfferEntries = new Map<string, readonly string[]>();

  constructor(
    private readonly ctx: ServiceContext,
    private readonly policies: PolicyService,
    private readonly swaps: SwapService,
  ) {
    this.ops = new PolicyOps(ctx.chain);
  }

  /**
   * The policy and the allowlist's verdict on `merchant`. The payment path (`fresh` false) uses its cached policy,
   * which answers only "yes" on its own: a refusal is read again from the chain first.
   */
  async admit(agent: AgentDoc, merchant: string, opts: { fresh: boolean }): Promise<Admission> {
    let { policy, cached } = opts.fresh
      ? { policy: await this.policies.onchain(agent), cached: false }
      : await this.policies.forPayment(agent);
    let proof = policy.deployed ? await this.policies.prove(policy.allowlistRoot, merchant) : null;
    if (!proof && cached) {
      ({ policy, cached } = await this.policies.forPayment(agent, true));
      proof = policy.deployed ? await this.policies.prove(policy.allowlistRoot, merchant) : null;
    }
    if (!policy.deployed) return { status: "no_policy", policy };
    if (!proof) return { status: "not_allowed", policy };
    return { status: "admitted", policy, proof, cached };
  }

  /** Whether this instance last read the agent's policy deployed and not paused (before its document says it is current). */
  lastReadActive(agentAddress: string): boolean {
    const policy = this.policies.lastRead(agentAddress);
    return policy !== undefined && policy.deployed && !policy.paused;
  }

  /**
   * Refuses (409) a payment for a policy whose operator this instance cannot act as, before anything is signed or paid
   * (a voucher may have asked its seller's 402 beside the agent's read: pay.ts, payHere). A cached
   * policy is read again first: a stale copy never refuses what the chain would accept (and a stale copy that still
   * names this service leaves the contract's revert as the backstop).
   */
  async checkOperator(agent: AgentDoc, policy: OnchainPolicy, cached: boolean): Promise<void> {
    if (policy.operator === null || (await this.relaysAs(policy.operator))) return;
    if (cached) return this.checkOperator(agent, (await this.policies.forPayment(agent, true)).policy, false);
    // The address to set back: the factory's default operator (the OperatorSet of a cluster), read on this rare path.
    const { chain } = this.ctx;
    const [byDefault] = await chain.readMany([readOf(chain.factory, "defaultOperator")]).catch(() => [null]);
    if (byDefault?.toLowerCase() === policy.operator.toLowerCase()) {
      // Not the owner's doing: this instance's key is not (or no longer) in the service's own set.
      throw unavailable(
        `This instance's operator key ${chain.operator.address} is not a member of the service's OperatorSet ${byDefault}; nothing was signed or paid. Another instance can pay; its operators add the key with scripts/operators.ts.`,
      );
    }
    throw foreignOperatorError(agent, policy.operator, byDefault ?? chain.operator.address);
  }

  /**
   * Whether the allowlist entry that admitted the payment requires its seller to sign its offers (the owner's
   * requireSignedOffer, a rule the service keeps: docs/receipts.md). Read from the owner's last SetPolicy as the service
   * recorded it, and remembered per policy (its signed timestamp), so the payment path asks the store once per policy.
   */
  async requiresSignedOffer(agent: AgentDoc, admitted: { policy: OnchainPolicy; proof: AllowlistProof }): Promise<boolean> {
    const { policy, proof } = admitted;
    const key = `${agent.address}|${policy.lastUpdated ?? 0}`;
    let entries = this.signedOfferEntries.get(key);
    if (!entries) {
      const doc = await this.ctx.store.policies.findOne(
        { agentAddress: agent.address },
        { projection: { allowlistRoot: 1, signedOffers: 1, timestamp: 1 } },
      );
      entries = doc?.allowlistRoot === policy.allowlistRoot ? (doc.signedOffers ?? []) : [];
      // Kept only when the record is of the policy in force (one relayed elsewhere may not be recorded yet).
      if (doc && doc.timestamp === policy.lastUpdated) {
        if (this.signedOfferEntries.size >= 10_000) this.signedOfferEntries.clear();
        this.signedOfferEntries.set(key, entries);
      }
    }
    return entries.includes(proof.leaf);
  }

  /** Drops what was read of the agent's policy and of the operator sets: the next payment reads both again. */
  forget(agent: AgentDoc): void {
    this.policies.forget(agent);
    this.ourOperatorSets.clear();
  }

  /** Whether this instance may act as `operator`: its own key, or a contract (OperatorSet) whose isOperator counts it in. */
  async relaysAs(operator: string): Promise<boolean> {
    const { chain } = this.ctx;
    const key = operator.toLowerCase();
    if (key === chain.operator.address.toLowerCase() || this.ourOperatorSets.has(key)) return true;
    const [member] = await chain.readMany([readOf(bind("OperatorSet", operator, chain.provider), "isOperator", chain.operator.address)]);
    if (member === true && this.ourOperatorSets.size < 1_000) this.ourOperatorSets.add(key);
    return member === true;
  }

  /**
   * The simulation at the caller's ceiling (with the wallet's USDC in the same call), started before the price is
   * known and handed to decide(); never rejects unobserved.
   */
  atCeiling(agent: AgentDoc, merchant: string, admission: Admission & { status: "admitted" }, ceiling: bigint): Promise<CheckWithBalance> {
    // The payee is not known before the quote: simulated as the leaf's own (decide() does not use this answer when the
    // seller names another).
    const { proof } = admission;
    const payTo = proof.payee !== ANY_PAYEE ? proof.payee : BLOCKED_RECORD_PAY_TO;
    const read = this.ops.checkWithBalance(agent.policyAddress, merchant, proof, payTo, ceiling, agent.address);
    read.catch(() => undefined);
    return read;
  }

  /**
   * The contract's simulation of paying `amount` to `payTo` at an admitted merchant. When the admission came from the
   * cache and the answer is not Allow, the policy is read again and, if its allowlist changed, proved and simulated again.
   */
  async decide(
    agent: AgentDoc,
    merchant: string,
    admission: Admission & { status: "admitted" },
    amount: bigint,
    payTo: string,
    /** The same simulation at the caller's ceiling, started earlier: when it allows, any lower price is allowed too. */
    atCeiling?: Promise<CheckWithBalance>,
  ): Promise<PolicyDecision> {
    let { policy, proof } = admission;
    // The ceiling was simulated with the leaf's payee: it speaks for this payment only when the seller names that one.
    const ceilingAllowed =
      atCeiling && payeeAllowed(proof, payTo) ? await atCeiling.then((r) => r.decision === Decision.Allow).catch(() => false) : false;
    const read =
      ceilingAllowed && atCeiling
        ? atCeiling
        : this.ops.checkWithBalance(agent.policyAddress, merchant, proof, payTo, amount, agent.address);
    read.catch(() => undefined);
    const held = read.then((r) => r.usdc);
    let swap = this.swapCheck(agent, policy, amount, held);
    let usdc: Promise<bigint | null> = held.catch(() => null);
    let check: { decision: Decision; reason: OnchainReasonName | null } = await read;
    if (check.decision !== Decision.Allow && admission.cached) {
      const root = policy.allowlistRoot;
      ({ policy } = await this.policies.forPayment(agent, true));
      if (policy.allowlistRoot !== root) {
        const again = await this.policies.prove(policy.allowlistRoot, merchant);
        if (!again) return { status: "block", reason: "merchant_not_allowed", policy, proof: NO_LEAF };
        proof = again;
        swap = this.swapCheck(agent, policy, amount);
        usdc = Promise.resolve(null);
        check = await this.ops.check(agent.policyAddress, merchant, proof, payTo, amount);
      }
    }
    return this.decisionOf(check, policy, proof, swap, usdc);
  }

  /**
   * The decision for `amount` read fresh from the chain, for a payment whose price is known (approve). A merchant
   * the allowlist does not admit is simulated too (with no leaf): the contract names the reason.
   */
  async evaluate(agent: AgentDoc, merchant: string, amount: bigint, payTo: string): Promise<PolicyDecision> {
    const policy = await this.policies.onchain(agent);
    if (!policy.deployed) throw noPolicyError(agent);
    await this.checkOperator(agent, policy, false);
    const proof = (await this.policies.prove(policy.allowlistRoot, merchant)) ?? NO_LEAF;
    const swap = this.swapCheck(agent, policy, amount);
    const check = await this.ops.check(agent.policyAddress, merchant, proof, payTo, amount);
    return this.decisionOf(check, policy, proof, swap, Promise.resolve(null));
  }

  private decisionOf(
    check: { decision: Decision; reason: OnchainReasonName | null },
    policy: OnchainPolicy,
    proof: AllowlistProof,
    swap: Promise<SwapCheck>,
    usdc: Promise<bigint | null>,
  ): PolicyDecision {
    if (check.decision === Decision.Block) return { status: "block", reason: check.reason ?? "blocked", policy, proof };
    return { status: check.decision === Decision.Allow ? "allow" : "requires_approval", policy, proof, swap, usdc };
  }

  /** Whether paying needs a swap and whether one can fund it (reads only); never rejects unobserved. */
  swapCheck(
    agent: AgentDoc,
    policy: { maxSwapSlippageBps: bigint; swapTwapSeconds: bigint },
    amount: bigint,
    usdcHeld?: Promise<bigint>,
  ): Promise<SwapCheck> {
    const check = this.swaps.check(agent, policy, amount, usdcHeld);
    check.catch(() => undefined);
    return check;
  }
}
