/** Owner alerts by webhook: endpoints and their delivery log. Owner keys only (an agent key gets 403). */
import { z } from "zod";
import {
  CreateWebhookRequest,
  CreateWebhookResponse,
  DeliveriesQuery,
  DeliveriesResponse,
  DisableWebhookResponse,
  TestWebhookResponse,
  WEBHOOK_EVENT_TYPES,
  WebhookIdParam,
  WebhooksResponse,
} from "../../schemas/webhooks";
import { json, operation, reply } from "../../api/operation";

/** The webhook id of the path (a malformed one answers 404 like a missing one). */
const WEBHOOK_PATH = z.strictObject({ id: WebhookIdParam.meta({ description: "the endpoint (whk_...)" }) });
const webhookNotFound = (p: Record<string, string>) => `Webhook ${p.id.slice(0, 64)} not found.`;

export const WEBHOOK_OPERATIONS = [
  operation({
    method: "POST",
    path: "/webhooks",
    tag: "Webhooks",
    summary: "Register a webhook endpoint for owner alerts (the signing secret is shown once)",
    description:
      `Events: ${WEBHOOK_EVENT_TYPES.join(", ")}. Each delivery is a POST of \`{ id, type, createdAt, data }\` with the header ` +
      '`SpendGate-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the secret>`, retried with exponential backoff ' +
      "for 24 h until a 2xx answer (at least once: dedupe by `id`). Redirects are not followed. The URL follows the seller rules: " +
      "https (plain http only with ALLOW_HTTP_SELLERS), no private address (unless ALLOW_PRIVATE_SELLERS), at most 2048 characters; " +
      "at most 10 active endpoints per owner.",
    auth: "owner",
    input: z.object({ body: CreateWebhookRequest }),
    responses: { 201: json("registered; `secret` is never shown again", CreateWebhookResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "conflict", "insecure_webhook_url", "unsafe_webhook_url"],
    handle: async ({ input, principal, deps }) => reply(201, await deps.webhooks.create(principal, input.body)),
  }),
  operation({
    method: "GET",
    path: "/webhooks",
    tag: "Webhooks",
    summary: "The owner's webhook endpoints, newest first (without secrets)",
    auth: "owner",
    input: z.object({}),
    responses: { 200: json("active and disabled endpoints", WebhooksResponse) },
    errors: ["unauthorized", "forbidden"],
    handle: async ({ principal, deps }) => reply(200, await deps.webhooks.list(principal)),
  }),
  operation({
    method: "DELETE",
    path: "/webhooks/:id",
    tag: "Webhooks",
    summary: "Disable a webhook endpoint: nothing more is sent to it (its pending deliveries are cancelled)",
    auth: "owner",
    input: z.object({ params: WEBHOOK_PATH }),
    notFound: webhookNotFound,
    responses: { 200: json("the endpoint, disabled (its delivery log stays readable)", DisableWebhookResponse) },
    errors: ["unauthorized", "forbidden", "not_found"],
    handle: async ({ input, principal, deps }) => reply(200, await deps.webhooks.disable(principal, input.params.id)),
  }),
  operation({
    method: "GET",
    path: "/webhooks/:id/deliveries",
    tag: "Webhooks",
    summary: "An endpoint's deliveries, newest first, each with every attempt",
    auth: "owner",
    input: z.object({ params: WEBHOOK_PATH, query: DeliveriesQuery }),
    notFound: webhookNotFound,
    responses: { 200: json("a page of deliveries and the total", DeliveriesResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found"],
    handle: async ({ input, principal, deps }) => reply(200, await deps.webhooks.deliveries(principal, input.params.id, input.query)),
  }),
  operation({
    method: "POST",
    path: "/webhooks/:id/test",
    tag: "Webhooks",
    summary: "Send a `webhook.test` event to this endpoint",
    auth: "owner",
    input: z.object({ params: WEBHOOK_PATH }),
    notFound: webhookNotFound,
    responses: { 202: json("queued; see its delivery in the log", TestWebhookResponse) },
    errors: ["unauthorized", "forbidden", "not_found", "conflict"],
    handle: async ({ input, principal, deps }) => reply(202, await deps.webhooks.test(principal, input.params.id)),
  }),
];
