/** batch-settlement channels: what each holds, and closing one (refund to the wallet, credited back to the budgets). */
import { z } from "zod";
import { Address } from "../../schemas/common";
import { ChannelIdParam, ChannelsResponse, CloseChannelResponse, WithdrawChannelResponse } from "../../schemas/channels";
import { json, operation, reply } from "../../api/operation";

export const CHANNEL_OPERATIONS = [
  operation({
    method: "GET",
    path: "/agents/:address/channels",
    tag: "Payments",
    summary: "The agent's batch-settlement channels: deposited, charged (spent) and held (refundable)",
    auth: "either",
    input: z.object({ params: z.strictObject({ address: Address.meta({ description: "the agent" }) }) }),
    notFound: (p) => `Agent ${p.address} not found.`,
    responses: { 200: json("newest first, at most 100", ChannelsResponse) },
    errors: ["unauthorized", "forbidden", "not_found"],
    handle: async ({ input, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, input.params.address);
      return reply(200, await s.payments.channels(agent));
    },
  }),
  operation({
    method: "POST",
    path: "/agents/:address/channels/:channelId/close",
    tag: "Payments",
    summary: "Close a channel: the seller refunds what its vouchers did not charge, and the wallet credits it back to the budgets",
    description:
      "Asks the seller for a cooperative refund (the x402 batch-settlement refund: USDC goes back to the agent wallet, the " +
      "channel's payer, and nowhere else), then credits every deposit on-chain with what came back (creditChannel). No " +
      "signature is needed: nothing can leave the wallet this way. A seller that refuses answers 502 with nothing changed; " +
      "the channel stays open.",
    auth: "either",
    input: z.object({ params: ChannelIdParam }),
    notFound: (p) => `Agent ${p.address} not found.`,
    responses: { 200: json("the channel as closing left it", CloseChannelResponse) },
    errors: ["unauthorized", "forbidden", "not_found", "upstream_error", "unavailable"],
    handle: async ({ input, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, input.params.address);
      return reply(200, await s.payments.closeChannel(agent, input.params.channelId));
    },
  }),
  operation({
    method: "POST",
    path: "/agents/:address/channels/:channelId/withdraw",
    tag: "Payments",
    summary: "Force a channel's money back when its seller does not refund: start the timed withdrawal, then finish it",
    description:
      "The first call starts the channel contract's timed withdrawal of everything the seller has not claimed (the " +
      "wallet's withdrawChannel; the seller may still claim its vouchers during the channel's withdraw delay); a call " +
      "after the delay finishes it (finishChannelWithdraw) and credits back what came back (creditChannel). 409 while " +
      "the delay runs, or when nothing is left to withdraw. Money only returns to the wallet.",
    auth: "either",
    input: z.object({ params: ChannelIdParam }),
    notFound: (p) => `Agent ${p.address} not found.`,
    responses: { 200: json("started, or finished and credited", WithdrawChannelResponse) },
    errors: ["unauthorized", "forbidden", "not_found", "conflict", "unavailable"],
    handle: async ({ input, principal, deps: { networks } }) => {
      const { agent, s } = await networks.authorize(principal, input.params.address);
      return reply(200, await s.payments.withdrawChannel(agent, input.params.channelId));
    },
  }),
];
