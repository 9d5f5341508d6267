/** Spend policies: read by agent or owner keys, changed only with the owner's signature. */
import { z } from "zod";
import { badRequest, forbidden } from "../../errors";
import { OptionalAddressQuery } from "../../schemas/accounts";
import { Address } from "../../schemas/common";
import { fromBaseUnits } from "../../amounts";
import { LimitsResponse, SetLimitsRequest, SetLimitsResponse, SwapPriceQuery, SwapPriceResponse } from "../../schemas/limits";
import { SIGNED, json, operation, reply } from "../../api/operation";

export const LIMIT_OPERATIONS = [
  operation({
    method: "GET",
    path: "/limits",
    tag: "Policy",
    summary: "Spend policies, read from the agents' SpendPolicy contracts",
    description:
      "For an agent without a policy yet, `policyContract` is the factory's predicted address and `deployed` is false. " +
      "`windows` lists the day's window and each other window the policy limits (hourly, weekly, monthly = 30 days, lifetime) " +
      "with budget, spent, remaining and `resetsAt` (fixed windows aligned to UTC); `velocity` the payments left this hour; " +
      "`merchantRemainingToday` what each capped allowlist entry has left today.",
    auth: "either",
    input: z.object({ query: OptionalAddressQuery }),
    headers: [{ name: "X-Owner-Address", required: false, description: "403 unless every agent answered is linked to this owner" }],
    responses: { 200: json("one entry per agent", LimitsResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
    handle: async ({ input: { query }, principal, ctx, deps: { s, networks } }) => {
      // Each agent's policy is read on its own network's chain; an agent of a network no longer run is left out.
      const agents = query.address
        ? [await s.agents.authorize(principal, query.address)]
        : (await s.agents.visible(principal)).filter((a) => networks.get(networks.networkOf(a)));
      const ownerHeader = ctx.get("X-Owner-Address");
      if (ownerHeader) {
        const owner = Address.safeParse(ownerHeader);
        if (!owner.success) throw badRequest("X-Owner-Address must be a 0x address.");
        if (agents.some((a) => a.ownerAddress !== owner.data)) {
          throw forbidden(`The agent is not linked to ${owner.data}.`);
        }
      }
      return reply(200, { agents: await Promise.all(agents.map((a) => networks.of(a).policies.view(a))) });
    },
  }),
  operation({
    method: "POST",
    path: "/limits",
    tag: "Policy",
    summary: "Deploy or update an agent's on-chain spend policy",
    description:
      "Needs the owner's SetPolicy signature over every field (policy domain); the first call deploys the agent's SpendPolicy. " +
      "The optional limits (hourlyBudget, weeklyBudget, monthlyBudget, lifetimeBudget, maxPaymentsPerHour, validUntil, " +
      'swapTwapSeconds, merchantCaps) are 0, "no such limit", when absent, and are signed as 0. `merchantCaps` maps allowlist ' +
      "entries to their own daily cap (its leaf in the allowlist Merkle tree is [entry, cap]). maxSwapSlippageBps (at most " +
      "1000; 0 = no swaps) lets POST /pay buy a missing USDC shortfall with the wallet's WETH or ETH, at most that many basis " +
      "points above the pool's TWAP over swapTwapSeconds (60 to 3600 when swaps are on; 400 otherwise).",
    auth: "either",
    signature: "SetPolicy",
    input: z.object({ body: SetLimitsRequest }),
    responses: { 201: json("deployed or updated on-chain", SetLimitsResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "conflict", "unavailable", "gas_allowance_exceeded", ...SIGNED],
    handle: async ({ input: { body }, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, body.agentAddress);
      return reply(201, await s.policies.set(principal, agent, body));
    },
  }),
  operation({
    method: "GET",
    path: "/agents/:address/swap-price",
    tag: "Policy",
    summary: "The pool's average (TWAP) WETH price swaps are held to: what minSwapRate is compared with",
    auth: "either",
    input: z.object({
      params: z.strictObject({ address: Address.meta({ description: "the agent" }) }),
      query: SwapPriceQuery,
    }),
    notFound: (p) => `Agent ${p.address} not found.`,
    responses: { 200: json("the TWAP price, or null when there is none", SwapPriceResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found"],
    handle: async ({ input, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, input.params.address);
      const twap = await s.swaps.twapPrice(agent, input.query.twapSeconds);
      return reply(200, {
        agentAddress: agent.address,
        twapSeconds: input.query.twapSeconds,
        pool: twap?.pool ?? null,
        usdcPerWeth: twap ? fromBaseUnits(twap.usdcPerWeth) : null,
      });
    },
  }),
];
