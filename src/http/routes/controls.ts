/** Owner controls beyond the policy: the on-chain pause switch, withdrawals from the agent wallet, ownership. */
import Router from "@koa/router";
import { z } from "zod";
import { Address, Signature, UnixTimestamp } from "../../schemas/common";
import type { Services } from "../../services";
import { requireAuth } from "../auth";
import type { AppState } from "../types";
import { validate } from "../validate";
import { notFound } from "../../errors";
import { SetOwnerRequest, WithdrawRequest } from "../../schemas/owner";
import type { AppContext } from "../types";

/** The agent of the path, if the caller may act for it (404 for a malformed address). */
async function pathAgent(s: Services, ctx: AppContext) {
  const address = Address.safeParse(ctx.params.address);
  if (!address.success) throw notFound(`Agent ${ctx.params.address} not found.`);
  return s.agents.authorize(ctx.state.principal, address.data);
}

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
    ctx.body = await s.controls.setPaused(await pathAgent(s, ctx), ctx.state.input as z.infer<typeof PauseRequest>);
  });
  // Moving funds out and handing the agent over are the owner's alone (an owner key and the owner's signature).
  router.post("/agents/:address/withdraw", requireAuth("owner"), validate({ body: WithdrawRequest }), async (ctx) => {
    ctx.body = await s.controls.withdraw(await pathAgent(s, ctx), ctx.state.input as WithdrawRequest);
  });
  // A leaked agent key: the owner revokes it and hands the agent a new one (shown once).
  router.post("/agents/:address/key", requireAuth("owner"), async (ctx) => {
    const agent = await pathAgent(s, ctx);
    const revoked = await s.ctx.keys.revokeAll({ agentAddress: agent.address });
    const apiKey = await s.ctx.keys.issue({ role: "agent", agentAddress: agent.address });
    s.ctx.logger.info({ agent: agent.address, revoked }, "agent key rotated");
    ctx.status = 201;
    ctx.body = { agentAddress: agent.address, apiKey, revoked };
  });
  // Sign out everywhere: every owner key of this owner, the calling one included.
  router.post("/auth/keys/revoke", requireAuth("owner"), async (ctx) => {
    const p = ctx.state.principal!;
    if (p.role !== "owner") return;
    ctx.body = { ownerAddress: p.ownerAddress, revoked: await s.ctx.keys.revokeAll({ ownerAddress: p.ownerAddress }) };
  });
  router.get("/owner/gas", requireAuth("owner"), async (ctx) => {
    const p = ctx.state.principal!;
    if (p.role === "owner") ctx.body = await s.ctx.gas.usage(p.ownerAddress);
  });
  router.post("/agents/:address/owner", requireAuth("owner"), validate({ body: SetOwnerRequest }), async (ctx) => {
    ctx.body = await s.controls.setOwner(await pathAgent(s, ctx), ctx.state.input as SetOwnerRequest);
  });
  return router;
}
