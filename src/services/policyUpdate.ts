/**
 * An owner's policy update, relayed: the request checked (allowlist entries, caps, payees, swap settings), the owner's
 * SetPolicy signature over every field verified and consumed once, then the agent's policy deployed (the first time) or
 * updated on-chain, and what the chain now holds written to the store (the allowlist behind its root, the policy).
 * Every instance's payment path reads the new policy before its next payment (policyChanged).
 */
import { getAddress } from "ethers";
import { fromBaseUnits } from "../amounts";
import { revertToAppError } from "../chain/errors";
import { NO_EXTRA_LIMITS, SET_POLICY_TYPES, policyDomain } from "../chain/typedData";
import { badRequest, conflict } from "../errors";
import { type BuiltPolicy, PolicyRequestError, buildSignedPolicy } from "../policy/signedPolicy";
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
  const twap = input.swapTwapSeconds ?? 0;
  if (input.maxSwapSlippageBps && (twap < SWAP_TWAP_SECONDS.min || twap > SWAP_TWAP_SECONDS.max)) {
    throw badRequest(
      `With swaps on (maxSwapSlippageBps > 0), swapTwapSeconds must be ${SWAP_TWAP_SECONDS.min} to ${SWAP_TWAP_SECONDS.max}.`,
      { field: "swapTwapSeconds" },
    );
  }
  const built = buildPolicy(input);
  const { policy, entries, caps, payees, signedOffers, root } = built;
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
      { root },
      { $setOnInsert: { root, entries, caps: storedCaps, payees, createdAt: new Date() } },
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
    const tuple = { ...policy, merchants: policy.merchants.map((m) => ({ ...m })) };
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
      allowlistRoot: root,
      extraLimits: Object.fromEntries(Object.keys(NO_EXTRA_LIMITS).map((k) => [k, policy[k as keyof typeof NO_EXTRA_LIMITS].toString()])),
      merchantCaps: storedCaps,
      payees,
      signedOffers,
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
      allowlistRoot: root,
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
      requireSignedOffer: signedOffers,
      minSwapRate: fromBaseUnits(policy.minSwapRate),
    };
  });
}

/** The SetPolicy the request asks the owner to sign; a request no owner should sign is a 400 saying why. */
function buildPolicy(input: SetLimitsRequest): BuiltPolicy {
  try {
    return buildSignedPolicy(input);
  } catch (err) {
    if (err instanceof PolicyRequestError) throw badRequest(err.message, err.details);
    throw err;
  }
}
