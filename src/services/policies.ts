/** Spend policies: read from the agent's SpendPolicy contract, changed only with the owner's SetPolicy signature. */
import { getAddress } from "ethers";
import { fromBaseUnits, toBaseUnits } from "../amounts";
import { revertToAppError } from "../chain/errors";
import { SET_POLICY_TYPES, policyDomain } from "../chain/typedData";
import { badRequest, conflict } from "../errors";
import { EMPTY_ROOT, allowlistRoot, normalizeAllowlist } from "../policy/allowlist";
import type { PolicyView, SetLimitsRequest } from "../schemas/limits";
import type { AgentDoc, PolicyDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import type { ReadCall } from "../chain/client";
import type { Principal } from "./keys";
import { maskKey } from "./keys";

export interface OnchainPolicy {
  deployed: boolean;
  perTxLimit: bigint;
  dailyBudget: bigint;
  allowlistRoot: string;
  approvalThreshold: bigint;
  paused: boolean;
  spentToday: bigint;
  lastUpdated: number | null;
}

const UNDEPLOYED: OnchainPolicy = {
  deployed: false,
  perTxLimit: 0n,
  dailyBudget: 0n,
  allowlistRoot: EMPTY_ROOT,
  approvalThreshold: 0n,
  paused: false,
  spentToday: 0n,
  lastUpdated: null,
};

export class PolicyService {
  private readonly allowlistCache = new Map<string, string[]>();
  /** Deployed policies as last read, with the agent's policyChanges counter at that time. */
  private readonly paymentCache = new Map<string, { policy: OnchainPolicy; seq: number }>();

  constructor(private readonly ctx: ServiceContext) {}

  /** The policy as the contract holds it now (the chain is the source of truth). */
  async onchain(agent: AgentDoc): Promise<OnchainPolicy> {
    // One round trip for the four reads (this sits on the payment path).
    return this.fromReads(agent, await this.ctx.chain.readMany(this.policyReads(agent)));
  }

  /** The reads onchain() makes, for a caller that adds its own to the same round trip (fromReads decodes them). */
  policyReads(agent: AgentDoc): ReadCall[] {
    const contract = this.ctx.chain.policyAt(agent.policyAddress, this.ctx.chain.provider);
    return [
      { contract, method: "policy" },
      { contract, method: "paused" },
      { contract, method: "spentToday" },
      { contract, method: "lastTimestamp", args: [0] },
    ];
  }

  async fromReads(agent: AgentDoc, [p, paused, spent, last]: (unknown[] | null)[]): Promise<OnchainPolicy> {
    if (!p || !paused || !spent || !last) {
      if (!(await this.ctx.chain.isDeployed(agent.policyAddress))) return UNDEPLOYED;
      throw new Error(`could not read the policy at ${agent.policyAddress}`);
    }
    const policy = p[0] as { perTxLimit: bigint; dailyBudget: bigint; allowlistRoot: string; approvalThreshold: bigint };
    return {
      deployed: true,
      perTxLimit: policy.perTxLimit,
      dailyBudget: policy.dailyBudget,
      allowlistRoot: policy.allowlistRoot,
      approvalThreshold: policy.approvalThreshold,
      paused: paused[0] as boolean,
      spentToday: spent[0] as bigint,
      lastUpdated: Number(last[0]),
    };
  }

  /**
   * The policy for the payment path without a chain read when nothing changed: cached per agent and read again once
   * the indexer has recorded a PolicyUpdated, PausedSet, OperatorSet or OwnerSet of the agent (its `policyChanges`
   * counter moved; any instance's indexer) or when `fresh`. The contract's simulation stays the authority: the payment
   * path reads afresh before any refusal that a stale copy could have caused.
   */
  async forPayment(agent: AgentDoc, fresh = false): Promise<{ policy: OnchainPolicy; cached: boolean }> {
    const mark = await this.ctx.store.collection<{ agentAddress: string; seq: number }>("policyChanges").findOne({ agentAddress: agent.address });
    const seq = mark?.seq ?? 0;
    const hit = this.paymentCache.get(agent.address);
    if (!fresh && hit && hit.seq === seq) return { policy: hit.policy, cached: true };
    const policy = await this.onchain(agent);
    if (policy.deployed) {
      if (this.paymentCache.size >= 10_000) this.paymentCache.clear();
      this.paymentCache.set(agent.address, { policy, seq });
    } else this.paymentCache.delete(agent.address);
    return { policy, cached: false };
  }

  /** The allowlist entries behind an on-chain root (the chain stores only the root). */
  async allowlistFor(root: string): Promise<string[]> {
    if (root === EMPTY_ROOT) return [];
    const cached = this.allowlistCache.get(root);
    if (cached) return cached;
    const doc = await this.ctx.store.allowlists.findOne({ root });
    if (!doc) return [];
    // Content-addressed (the root is the hash of the entries), so a cached answer can never be stale.
    if (allowlistRoot(doc.entries) !== root) throw new Error(`stored allowlist does not hash to ${root}`);
    if (this.allowlistCache.size > 10_000) this.allowlistCache.clear();
    this.allowlistCache.set(root, doc.entries);
    return doc.entries;
  }

  async view(agent: AgentDoc): Promise<PolicyView> {
    const p = await this.onchain(agent);
    const remaining = p.dailyBudget > p.spentToday ? p.dailyBudget - p.spentToday : 0n;
    return {
      address: agent.address,
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
      lastUpdated: p.lastUpdated,
    };
  }

  /** Deploys the agent's policy (first time) or updates it, with the owner's SetPolicy signature over every field. */
  async set(principal: Principal, agent: AgentDoc, input: SetLimitsRequest) {
    if (!agent.ownerAddress) {
      throw conflict(`Agent ${agent.address} has no owner yet: link it first (POST /agents/link).`);
    }
    const owner = agent.ownerAddress;
    const { entries, invalid } = normalizeAllowlist(input.allowlist);
    if (invalid.length) throw badRequest(`Not host names: ${invalid.join(", ")}`, { invalidAllowlistEntries: invalid });
    const policy = {
      perTxLimit: toBaseUnits(input.perTxLimit),
      dailyBudget: toBaseUnits(input.dailyBudget),
      allowlistRoot: allowlistRoot(entries),
      approvalThreshold: toBaseUnits(input.approvalThreshold),
    };
    const digest = await this.ctx.signatures.verify({
      kind: "SetPolicy",
      domain: policyDomain(this.ctx.config.chainId, agent.policyAddress),
      types: SET_POLICY_TYPES,
      message: { agent: agent.address, ...policy, timestamp: input.timestamp },
      signature: input.humanSignature,
      expectedSigner: owner,
      timestamp: input.timestamp,
    });

    return this.ctx.agentLock.run(agent.address, async () => {
      await this.ctx.gas.check(owner);
      await this.ctx.signatures.consume("SetPolicy", digest);
      // Written before the transaction: whatever happens next, the root on-chain can be mapped back to its entries.
      await this.ctx.store.allowlists.updateOne(
        { root: policy.allowlistRoot },
        { $setOnInsert: { root: policy.allowlistRoot, entries, createdAt: new Date() } },
        { upsert: true },
      );
      const chain = this.ctx.chain;
      const deployed = await chain.isDeployed(agent.policyAddress);
      const tuple = [policy.perTxLimit, policy.dailyBudget, policy.allowlistRoot, policy.approvalThreshold];
      const contract = deployed ? chain.policyAt(agent.policyAddress) : chain.factory;
      const { receipt } = await chain
        .sendAndWait((overrides) =>
          deployed
            ? contract.updatePolicy(tuple, input.timestamp, input.humanSignature, overrides)
            : contract.deployAgent(agent.signerAddress, owner, tuple, input.timestamp, input.humanSignature, overrides),
        )
        .catch((err) => revertToAppError(contract, err));
      await this.ctx.gas.charge(owner, receipt);
      this.paymentCache.delete(agent.address);
      const doc: PolicyDoc = {
        agentAddress: agent.address,
        policyAddress: getAddress(agent.policyAddress),
        perTxLimit: policy.perTxLimit.toString(),
        dailyBudget: policy.dailyBudget.toString(),
        approvalThreshold: policy.approvalThreshold.toString(),
        allowlist: entries,
        allowlistRoot: policy.allowlistRoot,
        timestamp: input.timestamp,
        txHash: receipt.hash,
        deployed: true,
        updatedAt: new Date(),
      };
      await this.ctx.store.policies.updateOne({ agentAddress: agent.address }, { $set: doc }, { upsert: true });
      this.ctx.logger.info({ agent: agent.address, txHash: receipt.hash, deployed: !deployed }, "policy set");
      return {
        status: "deployed" as const,
        policyContract: agent.policyAddress,
        txHash: receipt.hash,
        agentAddress: agent.address,
        apiKey: principal.role === "registrar" ? "" : maskKey(principal.keyPrefix),
        perTxLimit: fromBaseUnits(policy.perTxLimit),
        dailyBudget: fromBaseUnits(policy.dailyBudget),
        allowlist: entries,
        approvalThreshold: fromBaseUnits(policy.approvalThreshold),
        allowlistRoot: policy.allowlistRoot,
        timestamp: input.timestamp,
      };
    });
  }
}
