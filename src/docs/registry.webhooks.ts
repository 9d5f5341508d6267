/** Owner alerts by webhook, for the route registry (spread into ROUTES). */
import {
  CreateWebhookRequest,
  CreateWebhookResponse,
  DeliveriesQuery,
  DeliveriesResponse,
  DisableWebhookResponse,
  TestWebhookResponse,
  WebhookIdParam,
  WebhooksResponse,
  WEBHOOK_EVENT_TYPES,
} from "../schemas/webhooks";
import type { RouteDoc } from "./registry";
import { json } from "./registryParts";

const ID = { id: { schema: WebhookIdParam, description: "the endpoint (whk_...)" } };

export const WEBHOOK_ROUTES: RouteDoc[] = [
  {
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
    body: CreateWebhookRequest,
    responses: { 201: json("registered; `secret` is never shown again", CreateWebhookResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "conflict", "insecure_webhook_url", "unsafe_webhook_url"],
  },
  {
    method: "GET",
    path: "/webhooks",
    tag: "Webhooks",
    summary: "The owner's webhook endpoints, newest first (without secrets)",
    auth: "owner",
    responses: { 200: json("active and disabled endpoints", WebhooksResponse) },
    errors: ["unauthorized", "forbidden"],
  },
  {
    method: "DELETE",
    path: "/webhooks/:id",
    tag: "Webhooks",
    summary: "Disable a webhook endpoint: nothing more is sent to it (its pending deliveries are cancelled)",
    auth: "owner",
    params: ID,
    responses: { 200: json("the endpoint, disabled (its delivery log stays readable)", DisableWebhookResponse) },
    errors: ["unauthorized", "forbidden", "not_found"],
  },
  {
    method: "GET",
    path: "/webhooks/:id/deliveries",
    tag: "Webhooks",
    summary: "An endpoint's deliveries, newest first, each with every attempt",
    auth: "owner",
    params: ID,
    query: DeliveriesQuery,
    responses: { 200: json("a page of deliveries and the total", DeliveriesResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found"],
  },
  {
    method: "POST",
    path: "/webhooks/:id/test",
    tag: "Webhooks",
    summary: "Send a `webhook.test` event to this endpoint",
    auth: "owner",
    params: ID,
    responses: { 202: json("queued; see its delivery in the log", TestWebhookResponse) },
    errors: ["unauthorized", "forbidden", "not_found", "conflict"],
  },
];
