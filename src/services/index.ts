import { PaymentService } from "../payments";
import type { IdempotencyService } from "../payments/idempotency";
import type { PolicyDecisions } from "../payments/decide";
import type { SwapService } from "../payments/swap";
import { AgentService } from "./agents";
import { ApprovalService } from "./approvals";
import { AuthService } from "./auth";
import { ControlService } from "./controls";
import type { ServiceContext } from "./context";
import { LedgerService } from "./ledger";
import { PolicyService } from "./policies";
import { WalletService } from "./wallet";

export interface Services {
  ctx: ServiceContext;
  agents: AgentService;
  policies: PolicyService;
  /** The policy decision of pay, approve and verify_merchant. */
  decisions: PolicyDecisions;
  auth: AuthService;
  wallet: WalletService;
  /** The payment's room (src/payments/): pay, quote, approve, recover. */
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
  const payments = new PaymentService(ctx, policies);
  return {
    ctx,
    agents: new AgentService(ctx),
    policies,
    decisions: payments.decisions,
    auth: new AuthService(ctx),
    wallet: new WalletService(ctx, policies),
    payments,
    approvals: new ApprovalService(ctx, payments),
    ledger: new LedgerService(ctx),
    idempotency: payments.idempotency,
    controls: new ControlService(ctx),
    swaps: payments.swaps,
  };
}
