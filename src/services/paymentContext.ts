/** What a payment is about: the merchant of its URL and the context every step of POST /pay carries. */
import { badRequest } from "../errors";
import { normalizeHost } from "../policy/allowlist";
import type { AgentDoc } from "../store/documents";
import type { Fence } from "../store/leases";
import type { SellerRequest } from "../x402/buyer";

/** The merchant of a URL: its normalised host name. */
export function merchantOf(serviceUrl: string): string {
  const url = new URL(serviceUrl);
  const host = normalizeHost(url.hostname.replace(/^\[|\]$/g, ""));
  if (!host) throw badRequest(`The serviceUrl's host ${url.hostname} is not a host name.`);
  return host;
}

export interface PaymentContext {
  agent: AgentDoc;
  /** The Idempotency-Key scope of the request, if it came with one. */
  idempotencyScope?: string;
  merchant: string;
  serviceUrl: string;
  intent: string;
  seller: SellerRequest;
  /** The agent lock and the Idempotency-Key the payment runs under: it commits to both before paying (SettlementSteps.commit). */
  fences?: { lock?: Fence; key?: Fence };
}

/** The fences a payment holds before paying: the agent's lock and its Idempotency-Key. */
export function fencesOf(pc: PaymentContext): Fence[] {
  return [pc.fences?.lock, pc.fences?.key].filter((f): f is Fence => f !== undefined);
}
