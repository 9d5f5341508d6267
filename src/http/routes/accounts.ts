/** Agents and owners: genesis, linking, listing, balances, SIWE sign-in. */
import Router from "@koa/router";
import { AddressQuery, GenesisRequest, LinkRequest, SiweNonceRequest, SiweVerifyRequest } from "../../schemas/accounts";
import type { Services } from "../../services";
import { agentView } from "../../services/presenters";
import { requireAuth } from "../auth";
import type { AppState } from "../types";
import { validate } from "../validate";

export function accountRoutes(s: Services): Router<AppState> {
  const router = new Router<AppState>();

  router.post("/wallet/genesis", validate({ body: GenesisRequest }), async (ctx) => {
    ctx.status = 201;
    ctx.body = await s.agents.genesis(ctx.state.principal, ctx.state.input);
  });

  router.post("/agents/link", validate({ body: LinkRequest }), async (ctx) => {
    ctx.body = await s.agents.link(ctx.state.principal, ctx.state.input as LinkRequest);
  });

  router.get("/wallet/agents", requireAuth(), async (ctx) => {
    const agents = await s.agents.visible(ctx.state.principal!);
    const deployed = await Promise.all(agents.map((a) => s.ctx.chain.isDeployed(a.policyAddress)));
    ctx.body = {
      agents: agents.map((a, i) => agentView(a, deployed[i])),
    };
  });

  router.get("/wallet/balance", requireAuth(), validate({ query: AddressQuery }), async (ctx) => {
    const agent = await s.agents.authorize(ctx.state.principal, ctx.state.input.address as string);
    ctx.body = await s.wallet.balance(agent);
  });

  router.get("/wallet/activation", requireAuth(), validate({ query: AddressQuery }), async (ctx) => {
    ctx.body = await s.agents.activation(ctx.state.principal, ctx.state.input.address as string);
  });

  router.post("/auth/siwe/nonce", validate({ body: SiweNonceRequest }), async (ctx) => {
    ctx.body = await s.auth.nonce(ctx.state.input.address as string);
  });

  router.post("/auth/siwe/verify", validate({ body: SiweVerifyRequest }), async (ctx) => {
    const { message, signature } = ctx.state.input as SiweVerifyRequest;
    ctx.body = await s.auth.verify(message, signature, { registrar: ctx.state.principal?.role === "registrar" });
  });

  return router;
}
