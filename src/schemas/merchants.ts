/** Asking a seller for its x402 quote without paying: what an owner pins as a merchant's payee. */
import { z } from "zod";
import { Address } from "./common";

export const MerchantQuoteRequest = z
  .strictObject({
    agentAddress: Address.meta({ description: "the agent the merchant is (to be) allowed for" }),
    url: z.string().trim().min(1).max(2_048).meta({
      description:
        "the seller's URL (http or https), or its host name alone (then https://<host>/ is asked). Owner keys may ask any seller (the same private-address and https rules as a payment); agent keys only merchants their on-chain allowlist admits",
      example: "https://api.weather.example/forecast",
    }),
  })
  .meta({ id: "MerchantQuoteRequest" });
export type MerchantQuoteRequest = z.infer<typeof MerchantQuoteRequest>;

export const AcceptedPayment = z
  .object({
    scheme: z.string().nullable(),
    network: z.string().nullable(),
    asset: z.string().nullable(),
    amount: z.string().nullable().meta({ description: "the price in the asset's base units (v1: maxAmountRequired)" }),
    payTo: z.string().nullable().meta({ description: "where the seller asks to be paid for this requirement" }),
    payable: z.boolean().meta({
      description: "true for the requirement SpendGate would pay (exact, this chain, USDC, EIP-3009): its payTo is the one to pin",
    }),
  })
  .meta({ id: "AcceptedPayment" });

export const MerchantQuoteResponse = z
  .object({
    agentAddress: z.string(),
    serviceUrl: z.string().meta({ description: "the URL asked" }),
    merchant: z.string().meta({ description: "the normalised host: the allowlist entry to add (or a wildcard covering it)" }),
    x402Version: z.number().int(),
    accepts: z.array(AcceptedPayment).meta({ description: "every payment the seller's 402 accepts, in its order" }),
    payTo: z
      .string()
      .nullable()
      .meta({ description: "the payTo of the payable requirement: what to put in POST /limits `payees` for this merchant" }),
    price: z.string().nullable().meta({ description: "the payable requirement's price, USDC" }),
    allowlistEntry: z
      .string()
      .nullable()
      .meta({ description: "the entry of the agent's current on-chain allowlist that admits the merchant, if any" }),
    pinnedPayee: z.string().nullable().meta({ description: "the payee that entry pins now (null: none, any address)" }),
    payeeMatches: z
      .boolean()
      .nullable()
      .meta({ description: "whether payTo is the pinned payee (null when nothing is pinned or nothing is payable)" }),
    advice: z.string(),
  })
  .meta({ id: "MerchantQuoteResponse" });
export type MerchantQuoteResponse = z.infer<typeof MerchantQuoteResponse>;
