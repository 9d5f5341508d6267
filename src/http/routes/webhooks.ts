/** Owner alerts by webhook: endpoints and their delivery log. Owner keys only (an agent key gets 403). */
import Router from "@koa/router";
import { notFound } from "../../errors";
import { CreateWebhookRequest, DeliveriesQuery, WebhookIdParam } from "../../schemas/webhooks";
import type { WebhookService } from "../../webhooks/endpoints";
import { requireAuth } from "../auth";
import type { AppContext, AppState } from "../types";
import { validate } from "../validate";

/** The webhook id of the path (a malformed one answers 404 like a missing one). */
function pathId(ctx: AppContext): string {
  const id = WebhookIdParam.safeParse(ctx.params.id);
  if (!id.success) throw notFound(`Webhook ${String(ctx.params.id).slice(0, 64)} not found.`);
  return id.data;
}

export function webhookRoutes(webhooks: WebhookService): Router<AppState> {
  const router = new Router<AppState>();
  router.post("/webhooks", requireAuth("owner"), validate({ body: CreateWebhookRequest }), async (ctx) => {
    ctx.status = 201;
    ctx.body = await webhooks.create(ctx.state.principal, ctx.state.input as CreateWebhookRequest);
  });
  router.get("/webhooks", requireAuth("owner"), async (ctx) => {
    ctx.body = await webhooks.list(ctx.state.principal);
  });
  router.delete("/webhooks/:id", requireAuth("owner"), async (ctx) => {
    ctx.body = await webhooks.disable(ctx.state.principal, pathId(ctx));
  });
  router.get("/webhooks/:id/deliveries", requireAuth("owner"), validate({ query: DeliveriesQuery }), async (ctx) => {
    const q = ctx.state.input as { limit: number; offset: number };
    ctx.body = await webhooks.deliveries(ctx.state.principal, pathId(ctx), q);
  });
  router.post("/webhooks/:id/test", requireAuth("owner"), async (ctx) => {
    ctx.status = 202;
    ctx.body = await webhooks.test(ctx.state.principal, pathId(ctx));
  });
  return router;
}
