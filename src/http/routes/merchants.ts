/** Merchants: a seller's quote without paying, to pin the payee an allowlist entry may pay. */
import { z } from "zod";
import { MerchantQuoteRequest, MerchantQuoteResponse } from "../../schemas/merchants";
import { quoteMerchant } from "../../services/merchantQuote";
import { SELLER_ERRORS, json, operation, reply } from "../../api/operation";

export const MERCHANT_OPERATIONS = [
  operation({
    method: "POST",
    path: "/merchants/quote",
    tag: "Policy",
    summary: "Ask a seller for its x402 quote without paying: the payTo to pin for a merchant",
    description:
      "Requests the seller's URL (GET) exactly as POST /pay would, reads its 402 and answers every accepted payment with its " +
      "`payTo`; `payTo` at the top is the one SpendGate would pay, the address to put in POST /limits `payees` for the merchant's " +
      "entry. Nothing is signed or paid. Owner keys may ask any seller (the private-address and https rules of payments apply); " +
      "agent keys only merchants their on-chain allowlist admits (403 otherwise).",
    auth: "either",
    input: z.object({ body: MerchantQuoteRequest }),
    responses: { 200: json("the seller's accepted payments and the payee to pin", MerchantQuoteResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "payment_not_required", ...SELLER_ERRORS],
    handle: async ({ input: { body }, principal, deps: { networks } }) => {
      // The agent's network's services: the quote is read as that agent would pay it (on its chain).
      const { s } = await networks.authorize(principal, body.agentAddress);
      return reply(200, await quoteMerchant(s, principal, body));
    },
  }),
];
