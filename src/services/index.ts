import { AgentService } from "./agents";
import { AuthService } from "./auth";
import type { ServiceContext } from "./context";
import { PolicyService } from "./policies";
import { WalletService } from "./wallet";

export interface Services {
  ctx: ServiceContext;
  agents: AgentService;
  policies: PolicyService;
  auth: AuthService;
  wallet: WalletService;
}

export function createServices(ctx: ServiceContext): Services {
  const policies = new PolicyService(ctx);
  return {
    ctx,
    agents: new AgentService(ctx),
    policies,
    auth: new AuthService(ctx),
    wallet: new WalletService(ctx, policies),
  };
}
