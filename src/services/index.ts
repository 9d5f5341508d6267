import { AgentService } from "./agents";
import { ApprovalService } from "./approvals";
import { AuthService } from "./auth";
import { ControlService } from "./controls";
import type { ServiceContext } from "./context";
import { PolicyDecisions } from "./decision";
import { IdempotencyService } from "./idempotency";
import { LedgerService } from "./ledger";
import { PaymentService } from "./payments";
import { PolicyService } from "./policies";
import { SettlementService, outcomeOf } from "./settlement";
import { SwapService } from "./swap";
import { WalletService } from "./wallet";

export interface Services {
  ctx: ServiceContext;
  agents: AgentService;
  policies: PolicyService;
  /** The policy decision of pay, approve and verify_merchant. */
  decisions: PolicyDecisions;
  auth: AuthService;
  wallet: WalletService;
  settlement: SettlementService;
  payments: PaymentService;
  approvals: ApprovalService;
  ledger: LedgerService;
  idempotency: IdempotencyService;
  controls: ControlService;
  /** Swaps before settlement (and the pool's TWAP price the policy form shows). */
  swaps: SwapService;
}

export function createServices(ctx: ServiceContext): Services {
  const policies = new PolicyService(ctx);
  const settlement = new SettlementService(ctx);
  const idempotency = new IdempotencyService(ctx.store, (payment) => outcomeOf(ctx, payment), {
    instanceId: ctx.instanceId,
    leaseMs: ctx.config.lockLeaseMs,
    clock: ctx.leases.clock,
    isDead: (holder) => ctx.leases.isDead(holder),
  });
  settlement.afterRecovery = (payment) => idempotency.settleFromPayment(payment);
  const swaps = new SwapService(ctx);
  const decisions = new PolicyDecisions(ctx, policies, swaps);
  const payments = new PaymentService(ctx, decisions, settlement, idempotency, swaps);
  return {
    ctx,
    agents: new AgentService(ctx),
    policies,
    decisions,
    auth: new AuthService(ctx),
    wallet: new WalletService(ctx, policies),
    settlement,
    payments,
    approvals: new ApprovalService(ctx, decisions, payments, settlement),
    ledger: new LedgerService(ctx),
    idempotency,
    controls: new ControlService(ctx),
    swaps,
  };
}
