/**
 * The owner's powers over an agent's wallet and keys beyond the policy, for the route registry (spread into ROUTES).
 */
import { Address } from "../schemas/common";
import {
  AgentKeyResponse,
  GasUsageResponse,
  RevokeOwnerKeysResponse,
  SetOwnerRequest,
  SetOwnerResponse,
  WithdrawRequest,
  WithdrawResponse,
} from "../schemas/owner";
import type { RouteDoc } from "./registry";
import { SIGNED, json } from "./registryParts";

export const OWNER_ROUTES: RouteDoc[] = [
  {
    method: "POST",
    path: "/agents/:address/withdraw",
    tag: "Policy",
    summary: "Withdraw funds from the agent's wallet (owner-signed; works while paused)",
    description:
      "The only way out of an agent wallet besides a payment the policy authorised: the owner's EIP-712 Withdraw, relayed by the service. " +
      "Any token (USDC, ETH, another ERC-20) to any address; each signature works once.",
    auth: "owner",
    signature: "Withdraw",
    params: { address: { schema: Address, description: "the agent" } },
    body: WithdrawRequest,
    responses: { 200: json("withdrawn on-chain", WithdrawResponse) },
    errors: [
      "bad_request",
      "unauthorized",
      "forbidden",
      "not_found",
      "conflict",
      "no_policy",
      "insufficient_funds",
      "withdraw_failed",
      ...SIGNED,
    ],
  },
  {
    method: "POST",
    path: "/agents/:address/key",
    tag: "Policy",
    summary: "Revoke the agent's API keys and issue it a new one (shown once)",
    auth: "owner",
    params: { address: { schema: Address, description: "the agent" } },
    responses: { 201: json("the new agent key; the old ones answer 401 from now on", AgentKeyResponse) },
    errors: ["unauthorized", "forbidden", "not_found"],
  },
  {
    method: "POST",
    path: "/auth/keys/revoke",
    tag: "Owners",
    summary: "Revoke every owner key of the calling owner (sign out everywhere)",
    auth: "owner",
    responses: { 200: json("how many keys were revoked", RevokeOwnerKeysResponse) },
    errors: ["unauthorized", "forbidden"],
  },
  {
    method: "GET",
    path: "/owner/gas",
    tag: "Policy",
    summary: "The operator gas this owner's agents cost today, against the daily allowance",
    description:
      "Every transaction the operator relays for the owner's agents (policy deploys and updates, pauses, withdrawals, blocked records, " +
      "authorisations, releases) is charged to the owner. Past OWNER_GAS_ALLOWANCE_GWEI a day, what costs the operator gas answers 429 " +
      "`gas_allowance_exceeded` (pauses, withdrawals and hand-overs never do).",
    auth: "owner",
    responses: { 200: json("today's figures", GasUsageResponse) },
    errors: ["unauthorized", "forbidden"],
  },
  {
    method: "POST",
    path: "/agents/:address/owner",
    tag: "Policy",
    summary: "Hand the agent over to a new owner (signed by the current owner)",
    auth: "owner",
    signature: "SetOwner",
    params: { address: { schema: Address, description: "the agent" } },
    body: SetOwnerRequest,
    responses: { 200: json("the new owner, on-chain and in the service", SetOwnerResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found", "conflict", "no_policy", ...SIGNED],
  },
];
