/** Agents and owners: genesis, linking, listing, balances, SIWE sign-in. */
import { z } from "zod";
import {
  ActivationResponse,
  AddressQuery,
  AgentsResponse,
  BalanceResponse,
  GenesisRequest,
  GenesisResponse,
  LinkRequest,
  LinkResponse,
  SiweNonceRequest,
  SiweNonceResponse,
  SiweVerifyRequest,
  SiweVerifyResponse,
} from "../../schemas/accounts";
import { agentView } from "../../services/presenters";
import { SIGNED, json, operation, reply } from "../../api/operation";

export const ACCOUNT_OPERATIONS = [
  operation({
    method: "POST",
    path: "/wallet/genesis",
    tag: "Agents",
    summary: "Create an agent wallet and its API key",
    description:
      "Creates a wallet (the key stays encrypted on the server) and an agent API key, shown once. With an owner key the " +
      "agent is created already linked. The same email and label again is 409 (on any network). `message` holds the owner's " +
      "activation link. `network` chooses the network the agent lives on for good (default: the service's first; GET /health lists them).",
    auth: "registrar",
    input: z.object({ body: GenesisRequest }),
    responses: { 201: json("created", GenesisResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "conflict"],
    handle: async ({ input, principal, deps: { networks } }) =>
      reply(201, await networks.named(input.body.network).agents.genesis(principal, input.body)),
  }),
  operation({
    method: "POST",
    path: "/agents/link",
    tag: "Owners",
    summary: "Link an agent to its owner",
    description:
      "No API key: the owner's LinkAgent signature (service domain) proves who the owner is, and `activationCode` (the `code` of the agent's activation link) proves the owner got the link from the agent. With the agent's own key as Bearer the code is not needed.",
    auth: "none",
    signature: "LinkAgent",
    input: z.object({ body: LinkRequest }),
    responses: { 200: json("linked", LinkResponse) },
    errors: ["bad_request", "forbidden", "not_found", "conflict", ...SIGNED],
    // The owner signs LinkAgent for the agent's chain: its network's services check it.
    handle: async ({ input, principal, deps: { networks } }) =>
      reply(200, await (await networks.forAddress(input.body.agentAddress)).agents.link(principal, input.body)),
  }),
  operation({
    method: "GET",
    path: "/wallet/activation",
    tag: "Agents",
    summary: "The agent's activation link again (with its code), for the agent or its owner",
    auth: "either",
    input: z.object({ query: AddressQuery }),
    responses: { 200: json("the activation link", ActivationResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
    handle: async ({ input, principal, deps: { s } }) => reply(200, await s.agents.activation(principal, input.query.address)),
  }),
  operation({
    method: "GET",
    path: "/wallet/agents",
    tag: "Agents",
    summary: "Agents visible to the key",
    auth: "either",
    input: z.object({}),
    responses: { 200: json("the key's agent, or every agent linked to the owner", AgentsResponse) },
    errors: ["unauthorized", "forbidden"],
    handle: async ({ principal, deps: { s, networks } }) => {
      const agents = await s.agents.visible(principal);
      // Each on its own network's chain; an agent of a network this service no longer runs is left out.
      const shown = agents.filter((a) => networks.get(networks.networkOf(a)));
      const deployed = await Promise.all(shown.map((a) => networks.of(a).ctx.chain.isDeployed(a.policyAddress)));
      return reply(200, {
        agents: shown.map((a, i) => agentView(a, networks.whereOf(a), deployed[i])),
      });
    },
  }),
  operation({
    method: "GET",
    path: "/wallet/balance",
    tag: "Agents",
    summary: "USDC, ETH and WETH balances and today's budget, read from chain",
    auth: "either",
    input: z.object({ query: AddressQuery }),
    responses: { 200: json("balances", BalanceResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
    handle: async ({ input, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, input.query.address);
      return reply(200, await s.wallet.balance(agent));
    },
  }),
  operation({
    method: "POST",
    path: "/auth/siwe/nonce",
    tag: "Owners",
    summary: "Owner sign-in, step 1: a one-time nonce",
    auth: "none",
    input: z.object({ body: SiweNonceRequest }),
    responses: { 200: json("nonce for the SIWE message", SiweNonceResponse) },
    errors: ["bad_request"],
    handle: async ({ input, deps: { s } }) => reply(200, await s.auth.nonce(input.body.address)),
  }),
  operation({
    method: "POST",
    path: "/auth/siwe/verify",
    tag: "Owners",
    summary: "Owner sign-in, step 2: the signed SIWE message for an owner key",
    description:
      "EIP-4361 message: domain = the API's host, URI = its origin, the chain id of a network the service runs (GET /health), the nonce from step 1; signed with personal_sign.",
    auth: "none",
    signature: "SIWE",
    input: z.object({ body: SiweVerifyRequest }),
    responses: { 200: json("the owner key (shown once) and its expiry", SiweVerifyResponse) },
    errors: ["bad_request", ...SIGNED],
    // Checked on the chain the message names (an owner's contract wallet answers there), if the service runs it.
    handle: async ({ input: { body }, principal, deps: { networks } }) => {
      const chainId = /^Chain ID: (\d{1,12})$/m.exec(body.message)?.[1];
      const s = (chainId && networks.byChainId(Number(chainId))) || networks.first;
      return reply(200, await s.auth.verify(body.message, body.signature, { registrar: principal?.role === "registrar" }));
    },
  }),
];
