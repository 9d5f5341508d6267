/** GET|POST /sell/agent-intel: SpendGate as an x402 seller (public challenge, paid resource); logic in x402/seller. */
import Router from "@koa/router";
import type { Services } from "../../services";
import { AgentIntelSeller } from "../../x402/seller";
import type { AppContext, AppState } from "../types";

export const SELL_PATH = "/sell/agent-intel";

export function sellRoutes(s: Services): Router<AppState> {
  const { config, chain, facilitator, logger, urls } = s.ctx;
  const seller = new AgentIntelSeller(
    {
      chainId: config.chainId,
      networkName: config.networkName,
      usdcAddress: config.usdcAddress,
      price: config.sellPrice,
      // Unset SELL_PAY_TO: the operator's address, which the service controls on every deployment.
      payTo: config.sellPayTo ?? chain.operator.address,
      explorerUrl: config.explorerUrl,
    },
    facilitator,
    {
      usdcBalance: async (address) => await chain.usdc.balanceOf(address),
      ethBalance: (address) => chain.provider.getBalance(address),
    },
    logger,
  );

  const sell = async (ctx: AppContext) => {
    const answer = await seller.handle({
      resourceUrl: `${urls.base || ctx.origin}${SELL_PATH}`,
      paymentSignature: ctx.get("PAYMENT-SIGNATURE") || undefined,
      xPayment: ctx.get("X-PAYMENT") || undefined,
    });
    ctx.status = answer.status;
    ctx.set(answer.headers);
    ctx.body = answer.body;
  };

  const router = new Router<AppState>();
  router.get(SELL_PATH, sell);
  router.post(SELL_PATH, sell);
  return router;
}
