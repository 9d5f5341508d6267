/** GET|POST /sell/agent-intel: SpendGate as an x402 seller (public challenge, paid resource); logic in x402/seller. */
import { z } from "zod";
import { readOf } from "../../chain/contracts";
import { networkOfChainId } from "../../chain/networks";
import { AgentIntel, PaymentChallenge } from "../../schemas/system";
import type { Services } from "../../services";
import { explorerBase } from "../../services/presenters";
import type { NetworkServices } from "../../services/networks";
import { AgentIntelSeller, type SellerOffer } from "../../x402/seller";
import { SellerSignatures, sellerSigningKey } from "../../x402/sellerSignatures";
import { json, rawOperation } from "../../api/operation";

export const SELL_PATH = "/sell/agent-intel";

/** The seller's offer on one network: its USDC, explorer, facilitator, and the payer's holdings read from its chain. */
export function offerOf(s: Services): SellerOffer {
  const { config, chain, facilitator } = s.ctx;
  const network = networkOfChainId(config.chainId);
  if (!network) throw new Error(`chain id ${config.chainId} is not a network of the table`);
  return {
    network,
    usdcAddress: config.usdcAddress,
    explorerUrl: explorerBase(s.ctx),
    facilitator,
    chain: {
      // Both through Multicall3, one call at one block (two calls before).
      holdings: async (address) => {
        const [usdc, eth] = await chain.readMany([
          readOf(chain.usdc, "balanceOf", address),
          readOf(chain.multicall, "getEthBalance", address),
        ]);
        if (usdc === null || eth === null) throw new Error(`could not read the holdings of ${address}`);
        return { usdc, eth };
      },
    },
  };
}

/** One seller per service, offering every network it runs (the first first), made on the first request. */
const sellers = new WeakMap<NetworkServices, AgentIntelSeller>();
function sellerFor(networks: NetworkServices): AgentIntelSeller {
  let seller = sellers.get(networks);
  if (seller) return seller;
  const { config, chain, logger } = networks.first.ctx;
  const [first, ...rest] = networks.all;
  seller = new AgentIntelSeller(
    // Unset SELL_PAY_TO: the operator's address, which the service controls on every deployment (one key on every network).
    { price: config.sellPrice, payTo: config.sellPayTo ?? chain.operator.address },
    [offerOf(first), ...rest.map(offerOf)],
    logger,
    new SellerSignatures(sellerSigningKey(config.walletEncryptionKey)),
  );
  sellers.set(networks, seller);
  return seller;
}

export const SELL_OPERATIONS = (["GET", "POST"] as const).map((method) =>
  rawOperation({
    method,
    path: SELL_PATH,
    tag: "Seller",
    summary: `SpendGate as an x402 seller: the paying agent's portfolio (${method})`,
    description:
      "Unpaid: 402 with the v1 JSON body, the v2 PAYMENT-REQUIRED header and X-Service-Amount, X-Service-Network, " +
      "X-Service-Chain-Id, X-Service-Token, X-Service-Receiver. One requirement per network the service runs (v1: those x402 v1 names), " +
      "each with its network's USDC and that token's EIP-712 domain; the headers name the first network. Paid: verified and settled " +
      "through x402 on the network paid, then the resource.",
    auth: "x402",
    input: z.object({}),
    headers: [
      { name: "PAYMENT-SIGNATURE", required: false, description: "x402 v2 payment payload (base64 JSON)" },
      { name: "X-PAYMENT", required: false, description: "x402 v1 payment payload (base64 JSON)" },
    ],
    responses: {
      200: json("paid: the resource", AgentIntel, { "PAYMENT-RESPONSE": "v2 settlement (base64 JSON); X-PAYMENT-RESPONSE for v1" }),
      402: json("payment required, or the payment was refused (`error` says why)", PaymentChallenge, {
        "PAYMENT-REQUIRED": "x402 v2 payment requirement (base64 JSON)",
        "X-Service-Amount": "price in USDC",
        "X-Service-Network": "network name",
        "X-Service-Token": "USDC contract",
        "X-Service-Receiver": "receiving address",
      }),
    },
    errors: ["upstream_error"],
    serve: async ({ ctx, deps: { s, networks } }) => {
      const answer = await sellerFor(networks).handle({
        resourceUrl: `${s.ctx.urls.base || ctx.origin}${SELL_PATH}`,
        paymentSignature: ctx.get("PAYMENT-SIGNATURE") || undefined,
        xPayment: ctx.get("X-PAYMENT") || undefined,
      });
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = answer.body;
    },
  }),
);
