/** Shapes of the webhook collections: endpoints, events (one per fact, deduplicated) and deliveries (the outbox). */
import type { ObjectId } from "mongodb";
import type { WebhookEventType } from "../schemas/webhooks";
import type { Sealed } from "./secrets";

export const WEBHOOK_COLLECTIONS = { endpoints: "webhookEndpoints", events: "webhookEvents", deliveries: "webhookDeliveries" } as const;

export interface WebhookEndpointDoc {
  _id?: ObjectId;
  endpointId: string;
  ownerAddress: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  /** The signing secret, AES-256-GCM under a key derived from WALLET_ENCRYPTION_KEY. */
  secret: Sealed;
  status: "active" | "disabled";
  createdAt: Date;
  disabledAt: Date | null;
}

export interface WebhookEventDoc {
  _id?: ObjectId;
  eventId: string;
  /** The fact's natural key (`payment.approved:txn_...`, a chain log...): one event per fact, however often it is told. */
  dedupeKey: string;
  type: string;
  ownerAddress: string;
  agentAddress: string | null;
  createdAt: Date;
  data: Record<string, unknown>;
  /** Set once a delivery exists for every endpoint subscribed when the event was first told. */
  fannedOut: boolean;
}

export interface DeliveryAttemptDoc {
  attempt: number;
  at: Date;
  httpStatus: number | null;
  error: string | null;
  latencyMs: number | null;
}

export type DeliveryStatus = "pending" | "delivered" | "failed" | "cancelled";

export interface WebhookDeliveryDoc {
  _id?: ObjectId;
  deliveryId: string;
  endpointId: string;
  ownerAddress: string;
  eventId: string;
  type: string;
  /** The exact JSON body sent in every attempt. */
  payload: string;
  status: DeliveryStatus;
  /** Attempts started (a claim counts one, so an attempt interrupted by a crash is counted too). */
  attempts: number;
  /** When the next attempt is due; while an attempt runs, the end of its lease. */
  nextAttemptAt: Date;
  /** The worker's claim of the running attempt: only its holder may record the attempt's outcome. */
  claim: string | null;
  createdAt: Date;
  /** No attempt starts after this (createdAt + 24 h): the delivery is then `failed`. */
  expiresAt: Date;
  deliveredAt: Date | null;
  lastHttpStatus: number | null;
  lastError: string | null;
  lastLatencyMs: number | null;
  log: DeliveryAttemptDoc[];
}
