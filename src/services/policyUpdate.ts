/**
 * An owner's policy update, relayed: the request checked (allowlist entries, caps, payees, swap settings), the owner's
 * SetPolicy signature over every field verified and consumed once, then the agent's policy deployed (the first time) or
 * updated on-chain, and what the chain now holds written to the store (the allowlist behind its root, the policy).
 * Every instance's payment path reads the new policy before its next payment (policyChanged).
 */
import { getAddress } from "ethers";
import { fromBaseUnits, toBaseUnits } from "../amounts";
import { revertToAppError } from "../chain/errors";
import { NO_EXTRA_LIMITS, type PolicyFields, SET_POLICY_TYPES, policyDomain } from "../chain/typedData";
import { badRequest, conflict } from "../errors";
import { ANY_PAYEE, allowlistRoot, normalizeAllowlist, normalizeAllowlistEntry } from "../policy/allowlist";
import { type SetLimitsRequest, SWAP_TWAP_SECONDS } from "../schemas/limits";
import type { AgentDoc, PolicyDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import type { Principal } from "../principal";
import { policyChanged } from "../store/channels";
import { maskKey } from "./keys";
import { linkMacValid } from "./linkMac";
import type { PolicyService } from "./policies";

/** Deploys the agent's policy (first time) or updates it, with the owner's SetPolicy signature over every field. */
export async function setPolicy(
  ctx: ServiceContext,
  policies: PolicyService,
  principal: Principal,
  agent: AgentDoc,
  input: SetLimitsRequest,
) {
  if (!agent.ownerAddress) {
    throw conflict(`Agent ${agent.address} has no owner yet: link it first (POST /agents/link).`);
  }
  const owner = agent.ownerAddress;
  const { entries, invalid } = normalizeAllowlist(input.allowlist);
  if (invalid.length) throw badRequest(`Not host names: ${invalid.join(", ")}`, { invalidAllowlistEntries: invalid });
  const twap = input.swapTwapSeconds ?? 0;
  if (input.maxSwapSlippageBps && (twap < SWAP_TWAP_SECONDS.min || twap > SWAP_TWAP_SECONDS.max)) {
    throw badRequest(
      `With swaps on (maxSwapSlippageBps > 0), swapTwapSeconds must be ${SWAP_TWAP_SECONDS.min} to ${SWAP_TWAP_SECONDS.max}.`,
      { field: "swapTwapSeconds" },
    );
  }
  const caps = capsOf(entries, input.merchantCaps ?? {});
  const payees = payeesOf(entries, input.payees ?? {});
  const units = (v: string | undefined) => (v === undefined ? 0n : toBaseUnits(v));
  const policy: PolicyFields = {
    perTxLimit: toBaseUnits(input.perTxLimit),
    dailyBudget: toBaseUnits(input.dailyBudget),
    allowlistRoot: allowlistRoot(entries, caps, "v3", payees),
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
  const storedCaps = Object.fromEntries(Object.entries(caps).map(([e, c]) => [e, c.toString()]));
  const signed = {
    kind: "SetPolicy",
    domain: policyDomain(ctx.config.chainId, agent.policyAddress),
    types: SET_POLICY_TYPES,
    message: { agent: agent.address, ...policy, timestamp: input.timestamp },
    signature: input.humanSignature,
    expectedSigner: owner,
    timestamp: input.timestamp,
  };

  return ctx.agentLock.run(agent.address, async () => {
    // Past the owner's gas allowance nothing is sent, and the signature stays usable.
    await ctx.signatures.verifyAndConsume(signed, () => ctx.gas.check(owner));
    // Written before the transaction: whatever happens next, the root on-chain can be mapped back to its entries.
    await ctx.store.allowlists.updateOne(
      { root: policy.allowlistRoot },
      { $setOnInsert: { root: policy.allowlistRoot, entries, caps: storedCaps, payees, createdAt: new Date() } },
      { upsert: true },
    );
    const chain = ctx.chain;
    const deployed = await chain.isDeployed(agent.policyAddress);
    // The first deployment fixes the owner on-chain: an open agent's link must carry this service's MAC (a database
    // write alone cannot re-link it); an owner-bound address admits no other owner whatever the database says.
    if (!deployed && !agent.ownerBound && !linkMacValid(ctx.config, agent.address, owner, agent.linkMac)) {
      throw conflict(
        `Agent ${agent.address}'s link to ${owner} was not made by this service (no valid link MAC): nothing was deployed. Link it again with POST /agents/link.`,
      );
    }
    const tuple = { ...policy };
    const wallet = chain.policyAt(agent.policyAddress);
    const { receipt } = await chain
      .sendAndWait((overrides) =>
        deployed
          ? wallet.updatePolicy(tuple, input.timestamp, input.humanSignature, overrides)
          : chain.factory.deployAgent(
              agent.signerAddress,
              owner,
              agent.ownerBound === true,
              tuple,
              input.timestamp,
              input.humanSignature,
              overrides,
            ),
      )
      .catch((err: unknown) => revertToAppError(deployed ? wallet : chain.factory, err));
    await ctx.gas.charge(owner, receipt);
    // Here and on every other instance: the next payment reads the new policy (and its new epoch) first.
    policies.forget(agent);
    await policyChanged(ctx.store, agent.address);
    const doc: PolicyDoc = {
      agentAddress: agent.address,
      policyAddress: getAddress(agent.policyAddress),
      perTxLimit: policy.perTxLimit.toString(),
      dailyBudget: policy.dailyBudget.toString(),
      approvalThreshold: policy.approvalThreshold.toString(),
      allowlist: entries,
      allowlistRoot: policy.allowlistRoot,
      extraLimits: Object.fromEntries(Object.keys(NO_EXTRA_LIMITS).map((k) => [k, policy[k as keyof PolicyFields].toString()])),
      merchantCaps: storedCaps,
      payees,
      timestamp: input.timestamp,
      txHash: receipt.hash,
      deployed: true,
      updatedAt: new Date(),
    };
    await ctx.store.policies.updateOne({ agentAddress: agent.address }, { $set: doc }, { upsert: true });
    ctx.logger.info({ agent: agent.address, txHash: receipt.hash, deployed: !deployed }, "policy set");
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
      hourlyBudget: fromBaseUnits(policy.hourlyBudget),
      weeklyBudget: fromBaseUnits(policy.weeklyBudget),
      monthlyBudget: fromBaseUnits(policy.monthlyBudget),
      lifetimeBudget: fromBaseUnits(policy.lifetimeBudget),
      maxPaymentsPerHour: Number(policy.maxPaymentsPerHour),
      validUntil: Number(policy.validUntil),
      maxSwapSlippageBps: Number(policy.maxSwapSlippageBps),
      swapTwapSeconds: Number(policy.swapTwapSeconds),
      merchantCaps: Object.fromEntries(Object.entries(caps).map(([e, c]) => [e, fromBaseUnits(c)])),
      payees,
      minSwapRate: fromBaseUnits(policy.minSwapRate),
    };
  });
}

/** Per-entry payees keyed by normalised entry (checksummed); each key must name an allowlist entry. Zero: any payee. */
function payeesOf(entries: readonly string[], input: Readonly<Record<string, string>>): Record<string, string> {
  return perEntry(entries, input, "payees", "unknownPayees", (address) => (getAddress(address) !== ANY_PAYEE ? getAddress(address) : null));
}

/** Per-entry caps keyed by normalised entry; each key must name an allowlist entry. Zero caps are dropped. */
function capsOf(entries: readonly string[], input: Readonly<Record<string, string>>): Record<string, bigint> {
  return perEntry(entries, input, "merchantCaps", "unknownMerchantCaps", (amount) =>
    toBaseUnits(amount) > 0n ? toBaseUnits(amount) : null,
  );
}

/**
 * A per-entry setting (`field`) keyed by normalised allowlist entry, each value as `read` gives it (null: dropped);
 * 400 naming every key that is no entry of the allowlist (in `details[unknownKey]`).
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
    throw badRequest(`${field} names entries that are not in allowlist: ${unknown.join(", ")}`, { [unknownKey]: unknown });
  return out;
}
