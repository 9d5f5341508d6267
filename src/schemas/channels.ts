/** batch-settlement channels of an agent's wallet (docs/schemes.md). */
import { z } from "zod";
import { Address } from "./common";

export const ChannelIdParam = z.strictObject({
  address: Address.meta({ description: "the agent" }),
  channelId: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "must be a bytes32 channel id (0x and 64 hex digits)")
    .meta({ description: "the channel id (bytes32)" }),
});

export const ChannelView = z
  .object({
    channelId: z.string(),
    merchant: z.string(),
    serviceUrl: z.string().meta({ description: "where the channel was opened (a refund asks the seller there)" }),
    receiver: z.string().meta({ description: "the seller's payee" }),
    status: z.enum(["open", "closed"]),
    deposited: z
      .string()
      .meta({ description: "every deposit authorised into it, USDC (each counted against the budgets when authorised)" }),
    balance: z.string().meta({ description: "what the channel contract holds of the wallet's deposits (claims included), USDC" }),
    charged: z.string().meta({ description: "what the seller's vouchers charged in all, USDC: money spent" }),
    claimed: z.string().nullable().meta({ description: "what the seller has claimed on-chain, USDC (null: the chain did not answer)" }),
    held: z.string().meta({ description: "money held, not spent: balance less charged, refundable by closing the channel" }),
    credited: z.string().meta({ description: "what came back and was credited to the budget windows on-chain, USDC" }),
    deposits: z.array(z.object({ paymentId: z.string(), transactionId: z.string(), amount: z.string(), credited: z.string().nullable() })),
    refunds: z.array(z.object({ amount: z.string(), txHash: z.string().nullable(), at: z.string() })),
    updatedAt: z.string(),
  })
  .meta({ id: "Channel" });

export const ChannelsResponse = z.object({ channels: z.array(ChannelView) }).meta({ id: "ChannelsResponse" });

export const CloseChannelResponse = ChannelView.extend({
  refunded: z.string().meta({ description: "what the seller refunded to the wallet now, USDC" }),
  creditedNow: z.string().meta({ description: "what the wallet credited back to the budget windows now, USDC" }),
}).meta({ id: "CloseChannelResponse" });

export const WithdrawChannelResponse = z
  .object({
    state: z.enum(["started", "finished"]).meta({ description: "started: the timed withdrawal runs; finished: paid back and credited" }),
    amount: z.string().meta({ description: "what the withdrawal asked for: everything the seller had not claimed, USDC" }),
    availableAt: z.string().meta({ description: "when it can be finished (the channel's withdraw delay after it started)" }),
    txHash: z.string(),
    channel: ChannelView.optional().meta({ description: "finished: the channel as left" }),
    creditedNow: z.string().optional().meta({ description: "finished: what the wallet credited back to the budgets now, USDC" }),
  })
  .meta({ id: "WithdrawChannelResponse" });
