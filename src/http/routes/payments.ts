/** Payments, approvals, the ledger and the embedded dev faucet. */
import Router from "@koa/router";
import { parseUnits } from "ethers";
import { giveFromFaucet } from "../../chain/faucet";
import { notFound } from "../../errors";
import { ApprovalDecisionRequest, ApprovalIdParam, FAUCET_TOKENS, FaucetRequest, LedgerQuery, PayRequest } from "../../schemas/payments";
import { OptionalAddressQuery } from "../../schemas/accounts";
import type { Services } from "../../services";
import { requireAuth } from "../auth";
import type { AppContext, AppState } from "../types";
import { validate } from "../validate";

function approvalId(ctx: AppContext): string {
  const parsed = ApprovalIdParam.safeParse(ctx.params.id);
  if (!parsed.success) throw notFound(`Approval ${ctx.params.id} not found.`);
  return parsed.data;
}

export function paymentRoutes(s: Services): Router<AppState> {
  const router = new Router<AppState>();

  // Paying is the agent's: owner keys read, approve and set limits (DESIGN 6).
  router.post("/pay", requireAuth("agent"), validate({ body: PayRequest }), async (ctx) => {
    const input = ctx.state.input as PayRequest;
    const principal = ctx.state.principal!;
    const agent = await s.agents.authorize(principal, input.agentAddress);
    const result = await s.payments.payOnce(principal, agent, input, ctx.get("Idempotency-Key") || undefined);
    if (result.replayed) ctx.set("Idempotent-Replayed", "true");
    for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
    ctx.status = result.status;
    ctx.body = result.body;
  });

  router.get("/approvals", requireAuth("owner"), validate({ query: OptionalAddressQuery }), async (ctx) => {
    const p = ctx.state.principal!;
    if (p.role !== "owner") return;
    ctx.body = await s.approvals.list(p.ownerAddress, ctx.state.input.address as string | undefined);
  });

  router.post("/approvals/:id/approve", requireAuth("owner"), validate({ body: ApprovalDecisionRequest }), async (ctx) => {
    ctx.body = await s.approvals.approve(ctx.state.principal!, approvalId(ctx), ctx.state.input as ApprovalDecisionRequest);
  });

  router.post("/approvals/:id/deny", requireAuth("owner"), validate({ body: ApprovalDecisionRequest }), async (ctx) => {
    ctx.body = await s.approvals.deny(ctx.state.principal!, approvalId(ctx), ctx.state.input as ApprovalDecisionRequest);
  });

  router.get("/ledger", requireAuth(), validate({ query: LedgerQuery }), async (ctx) => {
    const q = ctx.state.input as { address?: string; status?: never; limit: number; offset: number };
    if (q.address) await s.agents.authorize(ctx.state.principal, q.address);
    ctx.body = await s.ledger.list(ctx.state.principal!, q);
  });

  router.get("/ledger/:id", requireAuth(), async (ctx) => {
    const doc = /^txn_[0-9a-f]{24}$/.test(ctx.params.id) ? await s.ledger.get(ctx.params.id) : null;
    if (!doc) throw notFound(`Transaction ${ctx.params.id} not found.`);
    await s.agents.authorize(ctx.state.principal, doc.agentAddress);
    ctx.body = s.ledger.view(doc);
  });

  router.post("/dev/faucet", validate({ body: FaucetRequest }), async (ctx) => {
    if (!s.ctx.config.embeddedChain) throw notFound("No route for POST /dev/faucet.");
    const { agentAddress, amount, token } = ctx.state.input as FaucetRequest;
    const units = parseUnits(amount, FAUCET_TOKENS[token].decimals);
    const txHash = await giveFromFaucet(s.ctx.chain, agentAddress, token, units);
    ctx.body = { agentAddress, amount, currency: token, txHash };
  });

  return router;
}
