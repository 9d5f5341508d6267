/**
 * The webhook outbox: each fact becomes one event (deduplicated by its natural key) and one delivery per subscribed
 * endpoint, written before anything is sent. The worker (worker.ts) sends what is due; an in-process enqueue wakes it.
 */
import { randomBytes } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Collection } from "mongodb";
import type { Logger } from "pino";
import type { Store } from "../store";
import { ChangeMark, moveMark, within } from "../store/changeMarks";
import { TEST_EVENT_TYPE } from "../schemas/webhooks";
import { WEBHOOK_COLLECTIONS, type WebhookDeliveryDoc, type WebhookEndpointDoc, type WebhookEventDoc } from "./documents";

/** Deliveries are retried for a day after their event. */
export const DELIVERY_WINDOW_MS = 24 * 3_600_000;
/** Events and their delivery logs are kept this long (far longer than any fact can be told again). */
export const RETENTION_SECONDS = 30 * 86_400;

export const newEventId = () => `evt_${randomBytes(12).toString("hex")}`;
const newDeliveryId = () => `dlv_${randomBytes(12).toString("hex")}`;

export interface WebhookEventInput {
  type: string;
  /** The fact's natural key: telling the same fact twice (a re-read block, a retried write) enqueues nothing new. */
  dedupeKey: string;
  ownerAddress: string | null;
  agentAddress: string | null;
  data: Record<string, unknown>;
  /** Deliver to this endpoint only, whatever it subscribes to (test events). */
  endpointId?: string;
}

export interface WebhookCollections {
  endpoints: Collection<WebhookEndpointDoc>;
  events: Collection<WebhookEventDoc>;
  deliveries: Collection<WebhookDeliveryDoc>;
}

export function webhookCollections(store: Store): WebhookCollections {
  return {
    endpoints: store.collection<WebhookEndpointDoc>(WEBHOOK_COLLECTIONS.endpoints),
    events: store.collection<WebhookEventDoc>(WEBHOOK_COLLECTIONS.events),
    deliveries: store.collection<WebhookDeliveryDoc>(WEBHOOK_COLLECTIONS.deliveries),
  };
}

/** Unique indexes too, though CongoDB does not enforce them: every create-if-absent here is an upsert on its key. */
export async function ensureWebhookIndexes(store: Store): Promise<void> {
  const c = webhookCollections(store);
  await c.endpoints.createIndex({ endpointId: 1 }, { unique: true });
  await c.endpoints.createIndex({ ownerAddress: 1, createdAt: -1 });
  await c.events.createIndex({ dedupeKey: 1 }, { unique: true });
  await c.events.createIndex({ eventId: 1 }, { unique: true });
  await c.deliveries.createIndex({ deliveryId: 1 }, { unique: true });
  await c.deliveries.createIndex({ eventId: 1, endpointId: 1 }, { unique: true });
  await c.deliveries.createIndex({ status: 1, nextAttemptAt: 1 });
  await c.deliveries.createIndex({ endpointId: 1, createdAt: -1 });
  await c.events.createIndex({ createdAt: 1 }, { expireAfterSeconds: RETENTION_SECONDS });
  await c.deliveries.createIndex({ createdAt: 1 }, { expireAfterSeconds: RETENTION_SECONDS });
}

const isDuplicateKey = (err: unknown) => (err as { code?: number }).code === 11000;

/**
 * How long subscribed() answers from its memory of an owner's endpoints on its own; past it, for up to
 * SUBSCRIBED_LONGEST_MS after its read, while the store's endpoint mark (moved by every creation and disabling, read at
 * most this long ago: store/changeMarks.ts) says no endpoint changed since. It only spares a payment's alert the read
 * of the owner's endpoints when nobody listens: an event is always queued against the endpoints read at that moment
 * (emit), and one this memory skipped (an endpoint created on another instance within it) is told by the catch-up
 * sweep (catchUpAlerts, every 30 s over the last 90 s: by then no memory from before the endpoint stands). An endpoint
 * created or disabled here is seen at once.
 */
const SUBSCRIBED_MEMORY_MS = 1_000;
/** The longest subscribed() answers from a memory on the endpoint mark (an endpoint written without moving it). */
const SUBSCRIBED_LONGEST_MS = 10_000;
/** The change mark every endpoint creation and disabling moves. */
const ENDPOINTS_CHANGED = "webhookEndpoints.changed";
const SUBSCRIBED_OWNERS = 10_000;

export class WebhookOutbox {
  readonly c: WebhookCollections;
  private readonly listeners = new Set<() => void>();
  private readonly pending = new Set<Promise<void>>();
  private readonly subscriptions = new Map<string, { events: Set<string>; readAt: number; epoch: number }>();
  /** Moves when an endpoint changes here: a read that began before it is not remembered. */
  private generation = 0;
  /** Endpoints created or disabled by any instance (store/changeMarks.ts). */
  private readonly changes: ChangeMark;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.c = webhookCollections(store);
    this.changes = new ChangeMark(store, ENDPOINTS_CHANGED, { maxAgeMs: SUBSCRIBED_MEMORY_MS, longestMs: SUBSCRIBED_LONGEST_MS, now });
  }

  /** Called after each enqueue (the worker's wake-up: a new event goes out at once, not at the next poll). */
  onEnqueue(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Records the event once and a pending delivery for each active endpoint of the owner subscribed to its type.
   * Safe to repeat: the event is an upsert on its dedupe key, each delivery an upsert on (event, endpoint), and an
   * event whose deliveries were all written is not fanned out again (so an endpoint added later gets no old events).
   * Returns the event id, or null when no endpoint wants it.
   */
  async emit(input: WebhookEventInput): Promise<string | null> {
    return (await this.emitEvent(input))?.eventId ?? null;
  }

  /** emit(), also saying whether this call stored the event (false: an earlier telling of the same fact did). */
  private async emitEvent(input: WebhookEventInput): Promise<{ eventId: string; inserted: boolean } | null> {
    const { ownerAddress } = input;
    if (!ownerAddress) return null;
    const endpoints = (await this.c.endpoints.find({ ownerAddress, status: "active" }).toArray()).filter((e) =>
      input.endpointId ? e.endpointId === input.endpointId : input.type !== TEST_EVENT_TYPE && e.events.some((t) => t === input.type),
    );
    if (endpoints.length === 0) return null;
    const now = new Date();
    const eventId = newEventId();
    const event = await this.upsertEvent({ ...input, ownerAddress }, now, eventId);
    const inserted = event.eventId === eventId;
    if (event.fannedOut) return { eventId: event.eventId, inserted };
    const payload = JSON.stringify({ id: event.eventId, type: event.type, createdAt: event.createdAt.toISOString(), data: event.data });
    for (const e of endpoints) {
      await this.c.deliveries
        .updateOne(
          { eventId: event.eventId, endpointId: e.endpointId },
          {
            $setOnInsert: {
              deliveryId: newDeliveryId(),
              eventId: event.eventId,
              endpointId: e.endpointId,
              ownerAddress: e.ownerAddress,
              type: event.type,
              payload,
              status: "pending",
              attempts: 0,
              nextAttemptAt: now,
              claim: null,
              createdAt: now,
              expiresAt: new Date(event.createdAt.getTime() + DELIVERY_WINDOW_MS),
              deliveredAt: null,
              lastHttpStatus: null,
              lastError: null,
              lastLatencyMs: null,
              log: [],
            },
          },
          { upsert: true },
        )
        .catch((err: unknown) => {
          if (!isDuplicateKey(err)) throw err; // another instance wrote it first
        });
    }
    await this.c.events.updateOne({ eventId: event.eventId }, { $set: { fannedOut: true } });
    for (const listener of this.listeners) listener();
    return { eventId: event.eventId, inserted };
  }

  /**
   * Runs `work` (telling facts) after the caller has answered: alerts add nothing to a payment's latency. A fact
   * lost to a crash in between is told again by catchUpAlerts (src/services/alerts.ts).
   */
  later(work: () => Promise<unknown>): void {
    // Started once the current turn of the event loop is over: the caller's answer (written in this turn) goes out
    // before the alert's first store command is even encoded.
    const p: Promise<void> = nextTurn()
      .then(work)
      .then(() => undefined)
      .catch((err: unknown) => this.logger.error({ err }, "webhook alert failed"))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Waits for the work started by later() (before the store closes). */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  /**
   * The event types the owner's active endpoints subscribe to (empty: nobody listens, nothing to prepare), as read at
   * most SUBSCRIBED_MEMORY_MS ago, or since when no endpoint was created or disabled anywhere.
   */
  async subscribed(ownerAddress: string): Promise<Set<string>> {
    const known = this.subscriptions.get(ownerAddress);
    if (known && within(this.now(), known.readAt, SUBSCRIBED_MEMORY_MS)) return known.events;
    if (known && (await this.changes.confirmed(known.epoch, known.readAt)) !== null && this.subscriptions.get(ownerAddress) === known)
      return known.events;
    const [generation, readAt, epoch] = [this.generation, this.now(), this.changes.current()];
    const endpoints = await this.c.endpoints.find({ ownerAddress, status: "active" }, { projection: { events: 1 } }).toArray();
    const events = new Set(endpoints.flatMap((e) => e.events));
    if (generation === this.generation) {
      if (this.subscriptions.size >= SUBSCRIBED_OWNERS) this.subscriptions.clear();
      this.subscriptions.set(ownerAddress, { events, readAt, epoch });
    }
    return events;
  }

  /**
   * An endpoint was created or disabled here (written already): subscribed() reads the endpoints again, here at once,
   * on the other instances within SUBSCRIBED_MEMORY_MS (the mark moves). The change is made whatever happens to the
   * mark: a mark that cannot be moved is logged, and the others see the change within SUBSCRIBED_LONGEST_MS.
   */
  async endpointsChanged(): Promise<void> {
    this.generation++;
    this.subscriptions.clear();
    await moveMark(this.store, ENDPOINTS_CHANGED).catch((err: unknown) =>
      this.logger.warn(
        { err },
        `the webhook endpoint mark could not be moved: other instances see the change within ${SUBSCRIBED_LONGEST_MS / 1000} s`,
      ),
    );
  }

  /**
   * emit() for callers reporting a fact already decided: true when this call queued the event (a fact told before
   * queues nothing). An alert that cannot be queued is logged, never thrown.
   */
  async tell(input: WebhookEventInput): Promise<boolean> {
    return this.emitEvent(input).then(
      (r) => r?.inserted ?? false,
      (err: unknown) => {
        this.logger.error({ err, type: input.type, key: input.dedupeKey }, "webhook event could not be queued");
        return false;
      },
    );
  }

  private async upsertEvent(input: WebhookEventInput & { ownerAddress: string }, now: Date, eventId: string): Promise<WebhookEventDoc> {
    const write = () =>
      this.c.events.findOneAndUpdate(
        { dedupeKey: input.dedupeKey },
        {
          $setOnInsert: {
            eventId,
            dedupeKey: input.dedupeKey,
            type: input.type,
            ownerAddress: input.ownerAddress,
            agentAddress: input.agentAddress,
            createdAt: now,
            data: input.data,
            fannedOut: false,
          },
        },
        { upsert: true, returnDocument: "after" },
      );
    // On MongoDB two concurrent upserts of one key: one wins, the other gets E11000 and reads the winner's.
    const doc = await write().catch(async (err: unknown) => {
      if (!isDuplicateKey(err)) throw err;
      return this.c.events.findOne({ dedupeKey: input.dedupeKey });
    });
    if (!doc) throw new Error(`webhook event ${input.dedupeKey} could not be stored`);
    return doc;
  }
}
