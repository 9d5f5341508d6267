/**
 * Owner alerts: the facts an owner's webhooks hear about, told to the outbox from the one place each is decided (the
 * ledger's final write of a payment, the approval's creation and expiry, the indexer's confirmed chain events). Each
 * has a natural dedupe key, so telling a fact again (a retry, a re-read block) queues nothing new.
 */
import { fromBaseUnits } from "../amounts";
import type { ApprovalDoc, ChainEventDoc, PaymentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import { approvalAlertView, paymentView, paymentWhere } from "./presenters";
import { PolicyService, limitedWindows } from "./policies";

const PAYMENT_EVENTS: Record<string, string> = { approved: "payment.approved", blocked: "payment.blocked", failed: "payment.failed" };
const RECEIPT_INVALID = "payment.receipt_invalid";

/** Levels of a budget window (percent of the budget spent) that are announced, each once per window. */
export const THRESHOLD_LEVELS = [80, 100] as const;

/**
 * A spending window of a policy: `id` names the window's current period (the UTC day for "daily"), so a level is
 * announced again in the next period.
 */
export interface BudgetWindow {
  name: string;
  id: string;
  spent: bigint;
  budget: bigint;
}

/** The levels a window has reached (a budget of 0 allows nothing and announces nothing). */
export function reachedLevels(w: BudgetWindow): number[] {
  if (w.budget <= 0n) return [];
  return THRESHOLD_LEVELS.filter((level) => w.spent * 100n >= w.budget * BigInt(level));
}

/**
 * The agent's limited budget windows as the chain has them now (hourly, daily, weekly, monthly, lifetime). A window's
 * id is its current period in the contract's own clock (block time, fixed UTC windows aligned to the Unix epoch).
 */
export async function budgetWindows(ctx: ServiceContext, policyAddress: string): Promise<BudgetWindow[]> {
  const [policy, block] = await Promise.all([new PolicyService(ctx).onchainAt(policyAddress), ctx.chain.provider.getBlock("latest")]);
  if (!policy.deployed) return [];
  const now = block?.timestamp ?? Math.floor(Date.now() / 1000);
  return limitedWindows(policy).map((w) => ({
    name: w.window,
    id: w.seconds === null ? "lifetime" : periodId(w.seconds, now),
    spent: w.used,
    budget: w.limit,
  }));
}

/** The period containing `now` of a window `seconds` long: the UTC day for daily, its start time for the others. */
function periodId(seconds: number, now: number): string {
  const start = Math.floor(now / seconds) * seconds;
  return seconds === 86_400 ? new Date(start * 1000).toISOString().slice(0, 10) : new Date(start * 1000).toISOString();
}

/**
 * A payment's final outcome (approved, blocked, failed), and for an approved one the budget levels it reached.
 * `written`: the entry as its final write left it (read from the store otherwise). Returns how many events were queued.
 */
export async function alertPaymentDone(ctx: ServiceContext, txnId: string, written?: PaymentDoc): Promise<number> {
  const doc = written ?? (await ctx.store.payments.findOne({ txnId }).catch(() => null));
  const type = doc ? PAYMENT_EVENTS[doc.status] : undefined;
  if (!doc || !type || !doc.ownerAddress) return 0;
  // The same refusal again within 60 s shares the first one's record, and its alert: a looping agent is told once.
  if (doc.duplicateOf) return 0;
  let queued = 0;
  // On the payment path: an owner nobody listens for costs one small query, no chain read.
  const wanted = await ctx.webhooks.subscribed(doc.ownerAddress).catch(() => new Set<string>());
  if (wanted.has(type)) {
    const data = paymentView(doc, paymentWhere(ctx, doc));
    if (
      await ctx.webhooks.tell({ type, dedupeKey: `${type}:${txnId}`, ownerAddress: doc.ownerAddress, agentAddress: doc.agentAddress, data })
    )
      queued++;
  }
  // A receipt that failed its check (or never came for a signed offer): told once per entry, beside payment.approved.
  if (doc.receipt && !doc.receipt.verified && wanted.has(RECEIPT_INVALID)) {
    const data = { ...paymentView(doc, paymentWhere(ctx, doc)), problem: doc.receipt.problem };
    const dedupeKey = `${RECEIPT_INVALID}:${txnId}`;
    if (
      await ctx.webhooks.tell({ type: RECEIPT_INVALID, dedupeKey, ownerAddress: doc.ownerAddress, agentAddress: doc.agentAddress, data })
    ) {
      queued++;
    }
  }
  if (doc.status !== "approved" || !wanted.has("budget.threshold")) return queued;
  const windows = await budgetWindows(ctx, doc.policyAddress).catch((err: unknown) => {
    ctx.logger.warn({ err, txnId }, "budget windows could not be read for threshold alerts");
    return [];
  });
  for (const w of windows) {
    for (const level of reachedLevels(w)) {
      const told = await ctx.webhooks.tell({
        type: "budget.threshold",
        dedupeKey: `budget.threshold:${doc.agentAddress}:${w.name}:${w.id}:${level}`,
        ownerAddress: doc.ownerAddress,
        agentAddress: doc.agentAddress,
        data: {
          agentAddress: doc.agentAddress,
          window: w.name,
          period: w.id,
          level,
          spent: fromBaseUnits(w.spent),
          budget: fromBaseUnits(w.budget),
          remaining: fromBaseUnits(w.budget > w.spent ? w.budget - w.spent : 0n),
          transactionId: txnId,
        },
      });
      if (told) queued++;
    }
  }
  return queued;
}

/** approval.requested and approval.expired. */
export async function alertApproval(ctx: ServiceContext, type: "approval.requested" | "approval.expired", a: ApprovalDoc): Promise<number> {
  const told = await ctx.webhooks.tell({
    type,
    dedupeKey: `${type}:${a.approvalId}`,
    ownerAddress: a.ownerAddress,
    agentAddress: a.agentAddress,
    data: approvalAlertView(a, ctx.urls.dashboard),
  });
  return told ? 1 : 0;
}

/**
 * policy.updated and agent.paused from confirmed chain events (the indexer calls this). Throws when an event
 * cannot be queued, so the indexer tries again; the dedupe key (the log's position) keeps it to one event.
 */
export async function alertChainEvents(ctx: ServiceContext, events: ChainEventDoc[]): Promise<void> {
  for (const e of events) {
    if (e.removed || !e.agentAddress) continue;
    const type = e.event === "PolicyUpdated" ? "policy.updated" : e.event === "PausedSet" && e.args.paused === true ? "agent.paused" : null;
    if (!type) continue;
    const agent = await ctx.store.agents.findOne({ address: e.agentAddress });
    if (!agent?.ownerAddress) continue;
    const { agent: _agent, version, timestamp, paused: _paused, ...policy } = e.args;
    const data: Record<string, unknown> =
      type === "policy.updated"
        ? { agentAddress: e.agentAddress, version, policy, signedAt: timestamp, txHash: e.txHash, blockNumber: e.blockNumber }
        : { agentAddress: e.agentAddress, paused: true, signedAt: timestamp, txHash: e.txHash, blockNumber: e.blockNumber };
    await ctx.webhooks.emit({
      type,
      dedupeKey: `${type}:${e.chainId}:${e.txHash}:${e.logIndex}`,
      ownerAddress: agent.ownerAddress,
      agentAddress: e.agentAddress,
      data,
    });
  }
}

/**
 * Alerts are told after the answer (WebhookOutbox.later): an instance that stops in between loses them. This finds
 * the facts written since `since` for owners with an active endpoint whose event is missing, and tells them again
 * (the dedupe keys make a repeat harmless). Run by the service every 30 s. Returns how many events it queued.
 */
export async function catchUpAlerts(ctx: ServiceContext, since: Date): Promise<number> {
  const endpoints = await ctx.webhooks.c.endpoints.find({ status: "active" }, { projection: { ownerAddress: 1 } }).toArray();
  const owners = [...new Set(endpoints.map((e) => e.ownerAddress))];
  if (owners.length === 0) return 0;
  const [payments, approvals] = await Promise.all([
    ctx.store.payments
      .find(
        // This network's payments (their budget levels are read from its chain); every network's service runs this.
        {
          ...ctx.networkScope,
          ownerAddress: { $in: owners },
          phase: "done",
          status: { $in: ["approved", "blocked", "failed"] },
          updatedAt: { $gte: since },
        },
        { projection: { txnId: 1, status: 1, "receipt.verified": 1 } },
      )
      .limit(5_000)
      .toArray(),
    ctx.store.approvals
      .find({ ownerAddress: { $in: owners }, $or: [{ requestedAt: { $gte: since } }, { status: "expired", resolvedAt: { $gte: since } }] })
      .limit(5_000)
      .toArray(),
  ]);
  const facts: { key: string; tell: () => Promise<number> }[] = [
    ...payments.map((p) => ({ key: `${PAYMENT_EVENTS[p.status]}:${p.txnId}`, tell: () => alertPaymentDone(ctx, p.txnId) })),
    // A flagged receipt is its own fact (an endpoint may hear it and not payment.approved); telling again dedupes.
    ...payments
      .filter((p) => p.receipt?.verified === false)
      .map((p) => ({ key: `${RECEIPT_INVALID}:${p.txnId}`, tell: () => alertPaymentDone(ctx, p.txnId) })),
    ...approvals.map((a) => ({ key: `approval.requested:${a.approvalId}`, tell: () => alertApproval(ctx, "approval.requested", a) })),
    ...approvals
      .filter((a) => a.status === "expired")
      .map((a) => ({ key: `approval.expired:${a.approvalId}`, tell: () => alertApproval(ctx, "approval.expired", a) })),
  ];
  if (facts.length === 0) return 0;
  const told = new Set(
    (await ctx.webhooks.c.events.find({ dedupeKey: { $in: facts.map((f) => f.key) } }, { projection: { dedupeKey: 1 } }).toArray()).map(
      (e) => e.dedupeKey,
    ),
  );
  let n = 0;
  for (const f of facts.filter((f) => !told.has(f.key))) n += await f.tell();
  return n;
}
