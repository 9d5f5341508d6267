/**
 * What every step of a payment gets: the room (the service's context and the payment's own collaborators), and the
 * payment context of one request (its agent, merchant, seller request and the leases it runs under).
 */
import { LeaseLostError, badRequest } from "../errors";
import { normalizeHost } from "../policy/allowlist";
import type { PolicyOps } from "../chain/policyOps";
import type { SchemeOps } from "../chain/schemeOps";
import type { AgentDoc, PaymentDoc, PaymentPhase } from "../store/documents";
import type { Fence } from "../store/leases";
import type { SellerRequest } from "../x402/buyer";
import type { PaymentScheme } from "../schemas/payments";
import type { ServiceContext } from "../services/context";
import { alertPaymentDone } from "../services/alerts";
import type { ChannelCopies } from "./schemes/channelCopies";
import type { PolicyDecisions } from "./decide";
import type { IdempotencyService } from "./idempotency";
import type { LedgerBase, LedgerUpdate, PaymentLedger } from "./phases";
import type { SwapService } from "./swap";

/** The payment's collaborators, built once per service (src/payments/index.ts). */
export interface Room {
  ctx: ServiceContext;
  /** The one writer of payments' entries and phases. */
  ledger: PaymentLedger;
  /** The policy contract's operations (authorise, release, void, reads). */
  ops: PolicyOps;
  /** The wallet's operations for the x402 schemes beyond exact (ceilings, channel deposits, credits). */
  schemes: SchemeOps;
  decisions: PolicyDecisions;
  swaps: SwapService;
  idempotency: IdempotencyService;
  /** This instance's copies of the channels it paid through (a voucher's first write checks them). */
  channelCopies: ChannelCopies;
}

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
  /** The x402 schemes the caller allows, most preferred first (PayRequest.schemes; default all). */
  schemes?: readonly PaymentScheme[];
  /** The agent lock and the Idempotency-Key the payment runs under: it commits to both before paying (authorize.ts). */
  fences?: { lock?: Fence; key?: Fence };
}

/**
 * Checks that the agent's lock `pc` runs under is still this run's, before an effect of the payment that does not wait
 * for its commit (a refusal's on-chain record, a ceiling a crash left open): LeaseLostError, with nothing done, when
 * another instance took it over (a lock handed over in this process is not checked in the store otherwise).
 */
export async function stillLocked(pc: PaymentContext, what: string): Promise<void> {
  if (pc.fences?.lock && !(await pc.fences.lock.hold(what))) throw new LeaseLostError();
}

/** The fences a payment holds before paying: the agent's lock and its Idempotency-Key. */
export function fencesOf(pc: PaymentContext): Fence[] {
  return [pc.fences?.lock, pc.fences?.key].filter((f): f is Fence => f !== undefined);
}

/** Until when the instance working on a payment owns it; recovery leaves it alone before then. */
export function lease(room: Room): Date {
  return new Date(Date.now() + room.ctx.config.paymentLeaseMs);
}

/** A write on a payment in flight: it renews this instance's lease on it. */
export function inFlight(room: Room, set: LedgerUpdate): LedgerUpdate {
  return { ...set, updatedAt: new Date(), leaseUntil: lease(room), instanceId: room.ctx.instanceId };
}

/** Writes `set` on payment `txnId` in flight, while it is still in `phase`; whether it was. */
export function note(room: Room, txnId: string, phase: PaymentPhase, set: LedgerUpdate): Promise<boolean> {
  return room.ledger.set(txnId, phase, inFlight(room, set));
}

/**
 * The one place a payment's outcome is written ("done", from one of `from`): its owner's alert goes out from here,
 * with the entry as written. Null when the entry had moved on (another run finished it first).
 */
export async function finish(room: Room, txnId: string, from: readonly PaymentPhase[], set: LedgerUpdate): Promise<PaymentDoc | null> {
  const done = await room.ledger.finish(txnId, from, inFlight(room, set));
  if (done) room.ctx.webhooks.later(() => alertPaymentDone(room.ctx, txnId, done));
  else room.ctx.logger.warn({ txnId, from }, "a payment's outcome was written by another run first; this one was dropped");
  return done;
}

/**
 * A payment's outcome written at once, as a finished entry (a voucher's: vouchers.ts), unless another run wrote that
 * payment's outcome first: the entry written, with its owner's alert, or null.
 */
export async function recordOutcome(room: Room, entry: PaymentDoc): Promise<PaymentDoc | null> {
  if (!(await room.ledger.insertOnce(entry))) {
    room.ctx.logger.warn({ txnId: entry.txnId }, "a payment's outcome was written by another run first; this one was dropped");
    return null;
  }
  room.ctx.webhooks.later(() => alertPaymentDone(room.ctx, entry.txnId, entry));
  return entry;
}

/** What the payment's ledger entry knows before any value moves. */
export function ledgerBase(pc: PaymentContext, approvalId: string | null): LedgerBase {
  return {
    agentAddress: pc.agent.address,
    ...(pc.agent.network ? { network: pc.agent.network } : {}),
    ownerAddress: pc.agent.ownerAddress,
    policyAddress: pc.agent.policyAddress,
    merchant: pc.merchant,
    serviceUrl: pc.serviceUrl,
    currency: "USDC" as const,
    intent: pc.intent,
    approvalId,
    ...(pc.idempotencyScope ? { idempotencyScope: pc.idempotencyScope } : {}),
  };
}
