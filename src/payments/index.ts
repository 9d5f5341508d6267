/**
 * The payment's room, as the rest of the service sees it: POST /pay and MCP pay (payOnce), the seller's quote for the
 * dashboard and verify_merchant, an owner's approval, and recovery. Everything else in src/payments/ is a step.
 */
import type { ApprovalDecisionRequest, PayRequest } from "../schemas/payments";
import type { AgentDoc, ApprovalDoc, PaymentDoc } from "../store/documents";
import type { SellerRequest } from "../x402/buyer";
import type { ServiceContext } from "../services/context";
import type { Principal } from "../principal";
import type { PolicyService } from "../services/policies";
import { SchemeOps } from "../chain/schemeOps";
import { PolicyOps } from "../chain/policyOps";
import { type ApprovedAnswer, approve, closeWaiting } from "./approve";
import { ChannelCopies } from "./schemes/channelCopies";
import type { PaymentContext, Room } from "./context";
import { closeChannel, listChannels, withdrawChannel } from "./schemes/close";
import { PolicyDecisions } from "./decide";
import { IdempotencyService } from "./idempotency";
import { outcomeOf } from "./outcomes";
import { type AgentSource, payOnce } from "./pay";
import { PaymentLedger } from "./phases";
import { quote, sellerQuote } from "./quote";
import { awaitQuiet, recover } from "./recover";
import { type Refusal, refuse } from "./refuse";
import { sign } from "./sign";
import { SwapService } from "./swap";

export class PaymentService {
  readonly room: Room;

  constructor(ctx: ServiceContext, policies: PolicyService) {
    const swaps = new SwapService(ctx);
    const idempotency = new IdempotencyService(ctx.store, (payment: PaymentDoc) => outcomeOf(ctx, payment), {
      instanceId: ctx.instanceId,
      leaseMs: ctx.config.lockLeaseMs,
      clock: ctx.leases.clock,
      isDead: (holder) => ctx.leases.isDead(holder),
    });
    this.room = {
      ctx,
      ledger: new PaymentLedger(ctx.store.payments),
      ops: new PolicyOps(ctx.chain),
      schemes: new SchemeOps(ctx.chain),
      decisions: new PolicyDecisions(ctx, policies, swaps),
      swaps,
      idempotency,
      channelCopies: new ChannelCopies(),
    };
  }

  get ops(): PolicyOps {
    return this.room.ops;
  }

  get decisions(): PolicyDecisions {
    return this.room.decisions;
  }

  get swaps(): SwapService {
    return this.room.swaps;
  }

  get idempotency(): IdempotencyService {
    return this.room.idempotency;
  }

  payOnce(principal: Principal, agent: AgentSource, input: PayRequest, key?: string) {
    return payOnce(this.room, principal, agent, input, key);
  }

  /** The seller's quote for a payment (verify_merchant); throws a refusal as its AppError. */
  async quote(pc: PaymentContext) {
    const q = await quote(this.room, pc);
    if (q.kind === "refused") throw q.error;
    return q.quote;
  }

  /** The seller's 402 without paying (the dashboard's payee lookup); throws a refusal as its AppError. */
  async sellerQuote(seller: SellerRequest, payer: string) {
    const q = await sellerQuote(this.room, seller, payer);
    if (q.kind === "refused") throw q.error;
    return q;
  }

  /** Records a refusal (tests drive it directly). */
  async block(pc: PaymentContext, refusal: Refusal) {
    return (await refuse(this.room, pc, refusal)).outcome;
  }

  sign(agent: AgentDoc, q: Parameters<typeof sign>[2]) {
    return sign(this.room, agent, q);
  }

  approve(a: ApprovalDoc, input: ApprovalDecisionRequest, consume: () => Promise<void>): Promise<ApprovedAnswer> {
    return approve(this.room, a, input, consume);
  }

  closeWaiting(txnId: string, status: "denied" | "expired", at: Date) {
    return closeWaiting(this.room, txnId, status, at);
  }

  /** The agent's batch-settlement channels (close.ts). */
  channels(agent: AgentDoc) {
    return listChannels(this.room, agent);
  }

  /** Starts or finishes the forced withdrawal of channel `channelId` of `agent` (close.ts). */
  withdrawChannel(agent: AgentDoc, channelId: string) {
    return withdrawChannel(this.room, agent, channelId);
  }

  /** Refunds and credits back channel `channelId` of `agent`, under its lock (close.ts). */
  closeChannel(agent: AgentDoc, channelId: string) {
    return closeChannel(this.room, agent, channelId);
  }

  recover(now = new Date(), opts: { own?: boolean } = {}) {
    return recover(this.room, now, opts);
  }

  awaitQuiet(agentAddress: string, waitMs?: number) {
    return awaitQuiet(this.room, agentAddress, waitMs);
  }
}

export { MAX_PENDING_APPROVALS } from "./pending";
export { merchantOf } from "./context";
export type { AgentSource } from "./pay";
