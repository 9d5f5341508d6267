/** Owner controls beyond the policy: the on-chain pause switch. */
import Router from "@koa/router";
import { z } from "zod";
import { Address, Signature, UnixTimestamp } from "../../schemas/common";
import type { Services } from "../../services";
import { requireAuth } from "../auth";
import type { AppState } from "../types";
import { validate } from "../validate";
import { notFound } from "../../errors";

export const PauseRequest = z
  .strictObject({
    paused: z.boolean(),
    humanSignature: Signature.meta({ description: "the owner's EIP-712 SetPaused signature" }),
    timestamp: UnixTimestamp,
  })
  .meta({ id: "PauseRequest" });

export function controlRoutes(s: Services): Router<AppState> {
  const router = new Router<AppState>();
  router.post("/agents/:address/pause", requireAuth(), validate({ body: PauseRequest }), async (ctx) => {
    const address = Address.safeParse(ctx.params.address);
    if (!address.success) throw notFound(`Agent ${ctx.params.address} not found.`);
    const agent = await s.agents.authorize(ctx.state.principal, address.data);
    ctx.body = await s.controls.setPaused(agent, ctx.state.input as z.infer<typeof PauseRequest>);
  });
  return router;
}
