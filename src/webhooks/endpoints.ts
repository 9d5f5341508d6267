/** Owners' webhook endpoints: register (secret shown once), list, disable, the delivery log, a test event. */
import { randomBytes } from "node:crypto";
import { appError, conflict, forbidden, notFound } from "../errors";
import type { Principal } from "../principal";
import { type CreateWebhookRequest, MAX_WEBHOOKS_PER_OWNER, TEST_EVENT_TYPE } from "../schemas/webhooks";
import { privateAddressesOf } from "../x402/ssrf";
import type { WebhookDeliveryDoc, WebhookEndpointDoc } from "./documents";
import type { WebhookOutbox } from "./outbox";
import { newWebhookSecret, seal } from "./secrets";

const newEndpointId = () => `whk_${randomBytes(12).toString("hex")}`;

export interface WebhookUrlRules {
  /** Plain http receivers (ALLOW_HTTP_SELLERS: the seller rules). */
  allowHttp: boolean;
  /** Private, loopback and link-local receivers (ALLOW_PRIVATE_SELLERS: the seller rules). */
  allowPrivate: boolean;
}

/** The seller rules applied to a receiver's URL: https unless plain http is allowed, no private address unless allowed. */
export async function checkWebhookUrl(url: string, rules: WebhookUrlRules): Promise<void> {
  const u = new URL(url);
  if (u.protocol === "http:" && !rules.allowHttp) {
    throw appError(
      "insecure_webhook_url",
      `The webhook URL ${u.origin} is plain http; only https receivers are allowed here (ALLOW_HTTP_SELLERS).`,
    );
  }
  if (rules.allowPrivate) return;
  const refused = await privateAddressesOf(u.hostname).catch(() => {
    throw appError("unsafe_webhook_url", `The webhook host ${u.hostname} could not be resolved.`);
  });
  if (refused.length) {
    throw appError("unsafe_webhook_url", `The webhook host ${u.hostname} resolves to a private address; refused (ALLOW_PRIVATE_SELLERS).`);
  }
}

export function endpointView(e: WebhookEndpointDoc) {
  return {
    id: e.endpointId,
    url: e.url,
    events: e.events,
    description: e.description,
    status: e.status,
    createdAt: e.createdAt.toISOString(),
    disabledAt: e.disabledAt ? e.disabledAt.toISOString() : null,
  };
}

export function deliveryView(d: WebhookDeliveryDoc) {
  return {
    id: d.deliveryId,
    eventId: d.eventId,
    type: d.type,
    status: d.status,
    attempts: d.attempts,
    createdAt: d.createdAt.toISOString(),
    nextAttemptAt: d.status === "pending" ? d.nextAttemptAt.toISOString() : null,
    deliveredAt: d.deliveredAt ? d.deliveredAt.toISOString() : null,
    lastHttpStatus: d.lastHttpStatus,
    lastError: d.lastError,
    lastLatencyMs: d.lastLatencyMs,
    log: d.log.map((a) => ({
      attempt: a.attempt,
      at: a.at.toISOString(),
      httpStatus: a.httpStatus,
      error: a.error,
      latencyMs: a.latencyMs,
    })),
    payload: JSON.parse(d.payload) as unknown,
  };
}

export class WebhookService {
  constructor(
    private readonly outbox: WebhookOutbox,
    private readonly secretKey: Buffer,
    private readonly rules: WebhookUrlRules,
  ) {}

  private owner(principal: Principal | undefined): string {
    if (principal?.role !== "owner")
      throw forbidden("Only the owner manages webhooks: sign in with your wallet (SIWE) and use the owner key.");
    return principal.ownerAddress;
  }

  /** The owner's endpoint, active or disabled; another owner's answers 404 like a missing one. */
  private async endpoint(owner: string, endpointId: string): Promise<WebhookEndpointDoc> {
    const e = await this.outbox.c.endpoints.findOne({ endpointId, ownerAddress: owner });
    if (!e) throw notFound(`Webhook ${endpointId} not found.`);
    return e;
  }

  async create(principal: Principal | undefined, input: CreateWebhookRequest) {
    const owner = this.owner(principal);
    await checkWebhookUrl(input.url, this.rules);
    const active = await this.outbox.c.endpoints.countDocuments({ ownerAddress: owner, status: "active" });
    if (active >= MAX_WEBHOOKS_PER_OWNER) {
      throw conflict(`You have ${active} active webhook endpoints, the most allowed (${MAX_WEBHOOKS_PER_OWNER}); delete one first.`);
    }
    const endpointId = newEndpointId();
    const secret = newWebhookSecret();
    const doc: WebhookEndpointDoc = {
      endpointId,
      ownerAddress: owner,
      url: input.url,
      events: [...input.events],
      description: input.description ? input.description : null,
      secret: seal(this.secretKey, endpointId, secret),
      status: "active",
      createdAt: new Date(),
      disabledAt: null,
    };
    await this.outbox.c.endpoints.insertOne(doc);
    await this.outbox.endpointsChanged();
    return { ...endpointView(doc), secret };
  }

  async list(principal: Principal | undefined) {
    const owner = this.owner(principal);
    const docs = await this.outbox.c.endpoints.find({ ownerAddress: owner }).sort({ createdAt: -1, _id: -1 }).limit(200).toArray();
    return { endpoints: docs.map(endpointView) };
  }

  /** Disables the endpoint for good: nothing more is queued for it and its pending deliveries are cancelled. */
  async disable(principal: Principal | undefined, endpointId: string) {
    const owner = this.owner(principal);
    const e = await this.endpoint(owner, endpointId);
    if (e.status === "active") {
      const now = new Date();
      await this.outbox.c.endpoints.updateOne({ endpointId, status: "active" }, { $set: { status: "disabled", disabledAt: now } });
      await this.outbox.endpointsChanged();
      await this.outbox.c.deliveries.updateMany(
        { endpointId, status: "pending" },
        { $set: { status: "cancelled", lastError: "endpoint_disabled" } },
      );
    }
    return endpointView(await this.endpoint(owner, endpointId));
  }

  async deliveries(principal: Principal | undefined, endpointId: string, q: { limit: number; offset: number }) {
    const owner = this.owner(principal);
    await this.endpoint(owner, endpointId);
    const filter = { endpointId };
    const [docs, total] = await Promise.all([
      this.outbox.c.deliveries.find(filter).sort({ createdAt: -1, _id: -1 }).skip(q.offset).limit(q.limit).toArray(),
      this.outbox.c.deliveries.countDocuments(filter),
    ]);
    return { deliveries: docs.map(deliveryView), total, limit: q.limit, offset: q.offset };
  }

  /** Queues a `webhook.test` event for this endpoint only. */
  async test(principal: Principal | undefined, endpointId: string) {
    const owner = this.owner(principal);
    const e = await this.endpoint(owner, endpointId);
    if (e.status !== "active") throw conflict(`Webhook ${endpointId} is disabled.`);
    const dedupeKey = `${TEST_EVENT_TYPE}:${randomBytes(12).toString("hex")}`;
    const eventId = await this.outbox.emit({
      type: TEST_EVENT_TYPE,
      dedupeKey,
      ownerAddress: owner,
      agentAddress: null,
      endpointId,
      data: { message: "A test event from SpendGate: your endpoint receives and can verify deliveries." },
    });
    // No event or no delivery: the endpoint was disabled in between.
    const d = eventId ? await this.outbox.c.deliveries.findOne({ eventId, endpointId }) : null;
    if (!eventId || !d) throw conflict(`Webhook ${endpointId} is disabled.`);
    return { eventId, deliveryId: d.deliveryId, status: "pending" as const };
  }
}
