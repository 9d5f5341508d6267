/** Owner controls beyond the policy: the on-chain pause switch, withdrawals from the agent wallet, keys, ownership. */
import { z } from "zod";
import { Address } from "../../schemas/common";
import { PauseResponse } from "../../schemas/limits";
import {
  AgentKeyResponse,
  GasUsageResponse,
  PauseRequest,
  RevokeOwnerKeysResponse,
  SetOwnerRequest,
  SetOwnerResponse,
  WithdrawRequest,
  WithdrawResponse,
} from "../../schemas/owner";
import { SIGNED, json, operation, reply } from "../../api/operation";

/** The agent of the path; a malformed address answers 404 like an unknown one. */
const AGENT_PATH = z.strictObject({ address: Address.meta({ description: "the agent" }) });
const agentNotFound = (p: Record<string, string>) => `Agent ${p.address} not found.`;

export const PAUSE_OPERATION = operation({
  method: "POST",
  path: "/agents/:address/pause",
  tag: "Policy",
  summary: "Kill switch: pause or resume an agent's payments on-chain",
  auth: "either",
  signature: "SetPaused",
  input: z.object({ params: AGENT_PATH, body: PauseRequest }),
  notFound: agentNotFound,
  responses: { 200: json("the pause state on-chain", PauseResponse) },
  errors: ["bad_request", "unauthorized", "forbidden", "not_found", "conflict", "unavailable", ...SIGNED],
  handle: async ({ input, principal, deps: { networks } }) => {
    const { agent, s } = await networks.authorize(principal, input.params.address);
    return reply(200, await s.controls.setPaused(agent, input.body));
  },
});

/** Moving funds out, keys and handing the agent over are the owner's alone (an owner key, and its signature where money moves). */
export const OWNER_OPERATIONS = [
  operation({
    method: "POST",
    path: "/agents/:address/withdraw",
    tag: "Policy",
    summary: "Withdraw funds from the agent's wallet (owner-signed; works while paused)",
    description:
      "The only way out of an agent wallet besides a payment the policy authorised: the owner's EIP-712 Withdraw, relayed by the service. " +
      "Any token (USDC, ETH, another ERC-20) to any address; each signature works once.",
    auth: "owner",
    signature: "Withdraw",
    input: z.object({ params: AGENT_PATH, body: WithdrawRequest }),
    notFound: agentNotFound,
    responses: { 200: json("withdrawn on-chain", WithdrawResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found", "no_policy", "insufficient_funds", "withdraw_failed", ...SIGNED],
    handle: async ({ input, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, input.params.address);
      return reply(200, await s.controls.withdraw(agent, input.body));
    },
  }),
  // A leaked agent key: the owner revokes it and hands the agent a new one (shown once).
  operation({
    method: "POST",
    path: "/agents/:address/key",
    tag: "Policy",
    summary: "Revoke the agent's API keys and issue it a new one (shown once)",
    auth: "owner",
    input: z.object({ params: AGENT_PATH }),
    notFound: agentNotFound,
    responses: {
      201: json(
        "the new agent key; the old ones answer 401 from now on (other instances may answer their payments for up to 1 s, their reads for API_KEY_CACHE_MS)",
        AgentKeyResponse,
      ),
    },
    errors: ["unauthorized", "forbidden", "not_found"],
    handle: async ({ input, principal, deps: { s } }) => {
      const agent = await s.agents.authorize(principal, input.params.address);
      const revoked = await s.ctx.keys.revokeAll({ agentAddress: agent.address });
      const apiKey = await s.ctx.keys.issue({ role: "agent", agentAddress: agent.address });
      s.ctx.logger.info({ agent: agent.address, revoked }, "agent key rotated");
      return reply(201, { agentAddress: agent.address, apiKey, revoked });
    },
  }),
  // Sign out everywhere: every owner key of this owner, the calling one included.
  operation({
    method: "POST",
    path: "/auth/keys/revoke",
    tag: "Owners",
    summary: "Revoke every owner key of the calling owner (sign out everywhere)",
    auth: "owner",
    input: z.object({}),
    responses: { 200: json("how many keys were revoked", RevokeOwnerKeysResponse) },
    errors: ["unauthorized", "forbidden"],
    handle: async ({ principal, deps: { s } }) =>
      reply(200, { ownerAddress: principal.ownerAddress, revoked: await s.ctx.keys.revokeAll({ ownerAddress: principal.ownerAddress }) }),
  }),
  operation({
    method: "GET",
    path: "/owner/gas",
    tag: "Policy",
    summary: "The operator gas this owner's agents cost today, against the daily allowance",
    description:
      "Every transaction the operator relays for the owner's agents (policy deploys and updates, pauses, withdrawals, blocked records, " +
      "authorisations, releases) is charged to the owner. Past OWNER_GAS_ALLOWANCE_GWEI a day, what costs the operator gas answers 429 " +
      "`gas_allowance_exceeded` (pauses, withdrawals and hand-overs never do).",
    auth: "owner",
    input: z.object({}),
    responses: { 200: json("today's figures", GasUsageResponse) },
    errors: ["unauthorized", "forbidden"],
    handle: async ({ principal, deps: { s } }) => reply(200, await s.ctx.gas.usage(principal.ownerAddress)),
  }),
  operation({
    method: "POST",
    path: "/agents/:address/owner",
    tag: "Policy",
    summary: "Hand the agent over to a new owner (signed by the current owner)",
    auth: "owner",
    signature: "SetOwner",
    input: z.object({ params: AGENT_PATH, body: SetOwnerRequest }),
    notFound: agentNotFound,
    responses: { 200: json("the new owner, on-chain and in the service", SetOwnerResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found", "no_policy", ...SIGNED],
    handle: async ({ input, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, input.params.address);
      return reply(200, await s.controls.setOwner(agent, input.body));
    },
  }),
];
