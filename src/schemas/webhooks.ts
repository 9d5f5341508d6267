/** Owner alerts by webhook: endpoint registration, listings and the delivery log (REST and the API reference). */
import { z } from "zod";

/** The events an endpoint can subscribe to (docs/webhooks.md's table describes each). */
export const WEBHOOK_EVENT_TYPES = [
  "approval.requested",
  "approval.expired",
  "payment.approved",
  "payment.blocked",
  "payment.failed",
  "payment.receipt_invalid",
  "budget.threshold",
  "policy.updated",
  "agent.paused",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Sent only by POST /webhooks/:id/test, to that endpoint, whatever it subscribes to. */
export const TEST_EVENT_TYPE = "webhook.test";

export const MAX_WEBHOOK_URL_LENGTH = 2048;
export const MAX_WEBHOOKS_PER_OWNER = 10;

export const WebhookIdParam = z.string().regex(/^whk_[0-9a-f]{24}$/, "must be a webhook id (whk_...)");

export const CreateWebhookRequest = z
  .strictObject({
    url: z
      .string()
      .trim()
      .max(MAX_WEBHOOK_URL_LENGTH, `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`)
      .pipe(z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }))
      .refine((v) => !/^[a-z]+:\/\/[^/?#]*@/i.test(v), "must not carry a user name or password")
      .meta({
        description: "where deliveries are POSTed; https (plain http only where ALLOW_HTTP_SELLERS allows it)",
        example: "https://hooks.example.com/spendgate",
      }),
    events: z
      .array(z.enum(WEBHOOK_EVENT_TYPES))
      .min(1, "must name at least one event type")
      .max(WEBHOOK_EVENT_TYPES.length)
      .refine((v) => new Set(v).size === v.length, "must not repeat an event type")
      .meta({ description: "the event types to deliver" }),
    description: z.string().trim().max(200).optional().meta({ description: "a note for yourself (at most 200 characters)" }),
  })
  .meta({ id: "CreateWebhookRequest" });
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

export const WebhookEndpoint = z
  .object({
    id: z.string().meta({ description: "whk_..." }),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
    description: z.string().nullable(),
    status: z.enum(["active", "disabled"]),
    createdAt: z.string(),
    disabledAt: z.string().nullable(),
  })
  .meta({ id: "WebhookEndpoint" });

export const CreateWebhookResponse = WebhookEndpoint.extend({
  secret: z.string().meta({ description: "whsec_...: the signing secret, shown once (verify SpendGate-Signature with it)" }),
}).meta({ id: "CreatedWebhookEndpoint" });

export const WebhooksResponse = z.object({ endpoints: z.array(WebhookEndpoint) }).meta({ id: "WebhookEndpoints" });

export const DeliveriesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

const DeliveryAttempt = z.object({
  attempt: z.number().int(),
  at: z.string(),
  httpStatus: z.number().int().nullable().meta({ description: "the receiver's status; null when no answer came" }),
  error: z.string().nullable().meta({
    description:
      "why it failed: http_<status>, timeout, unsafe_address (the SSRF guard refused it; no connection), insecure_url, unreachable, redirect",
  }),
  latencyMs: z.number().int().nullable(),
});

export const WebhookDelivery = z
  .object({
    id: z.string().meta({ description: "dlv_..." }),
    eventId: z.string().meta({ description: "evt_...: the payload's id (the same in every retry; receivers dedupe by it)" }),
    type: z.string(),
    status: z.enum(["pending", "delivered", "failed", "cancelled"]),
    attempts: z.number().int(),
    createdAt: z.string(),
    nextAttemptAt: z.string().nullable(),
    deliveredAt: z.string().nullable(),
    lastHttpStatus: z.number().int().nullable(),
    lastError: z.string().nullable(),
    lastLatencyMs: z.number().int().nullable(),
    log: z.array(DeliveryAttempt).meta({ description: "every attempt, oldest first (the last 50)" }),
    payload: z.unknown().meta({ description: "the JSON body sent: { id, type, createdAt, data }" }),
  })
  .meta({ id: "WebhookDelivery" });

export const DeliveriesResponse = z
  .object({ deliveries: z.array(WebhookDelivery), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: "WebhookDeliveries" });

export const DisableWebhookResponse = WebhookEndpoint.meta({ id: "DisabledWebhookEndpoint" });

export const TestWebhookResponse = z
  .object({ eventId: z.string(), deliveryId: z.string(), status: z.literal("pending") })
  .meta({ id: "WebhookTest" });
