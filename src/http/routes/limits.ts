/** Spend policies: read by agent or owner keys, changed only with the owner's signature. */
import Router from "@koa/router";
import { forbidden } from "../../errors";
import { Address } from "../../schemas/common";
import { OptionalAddressQuery } from "../../schemas/accounts";
import { SetLimitsRequest } from "../../schemas/limits";
import type { Services } from "../../services";
import { requireAuth } from "../auth";
import type { AppState } from "../types";
import { validate } from "../validate";
import { badRequest } from "../../errors";

export function limitRoutes(s: Services): Router<AppState> {
  const router = new Router<AppState>();

  router.get("/limits", requireAuth(), validate({ query: OptionalAddressQuery }), async (ctx) => {
    const principal = ctx.state.principal!;
    const address = ctx.state.input.address as string | undefined;
    const agents = address ? [await s.agents.authorize(principal, address)] : await s.agents.visible(principal);
    const ownerHeader = ctx.get("X-Owner-Address");
    if (ownerHeader) {
      const owner = Address.safeParse(ownerHeader);
      if (!owner.success) throw badRequest("X-Owner-Address must be a 0x address.");
      if (agents.some((a) => a.ownerAddress !== owner.data)) {
        throw forbidden(`The agent is not linked to ${owner.data}.`);
      }
    }
    ctx.body = { agents: await Promise.all(agents.map((a) => s.policies.view(a))) };
  });

  router.post("/limits", requireAuth(), validate({ body: SetLimitsRequest }), async (ctx) => {
    const input = ctx.state.input as SetLimitsRequest;
    const agent = await s.agents.authorize(ctx.state.principal, input.agentAddress);
    ctx.status = 201;
    ctx.body = await s.policies.set(ctx.state.principal!, agent, input);
  });

  return router;
}
