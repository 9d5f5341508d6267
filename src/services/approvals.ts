/**
 * Owner approvals of payments above the threshold. Approve and deny need the owner key and the owner's EIP-712
 * ApprovalDecision signature; approve also carries that signature on-chain (the contract checks it again).
 */
import { ZeroAddress } from "ethers";
import { fromBaseUnits } from "../amounts";
import { APPROVAL_DECISION_TYPES, policyDomain } from "../chain/typedData";
import { appError, conflict, forbidden, notFound } from "../errors";
import type { ApprovalDecisionRequest, PayOutcome } from "../schemas/payments";
import type { ApprovalDoc } from "../store/documents";
import type { Fence } from "../store/leases";
import { LedgerWriter } from "../store/ledger";
import type { ServiceContext } from "./context";
import type { Principal } from "../principal";
import type { PaymentContext } from "./paymentContext";
import type { PaymentService } from "./payments";
import type { PolicyDecisions } from "./decision";
import type { SettlementService } from "./settlement";
import { alertApproval } from "./alerts";
import { approvalView } from "./presenters";

export class ApprovalService {
  private readonly ledger: LedgerWriter;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly decisions: PolicyDecisions,
    private readonly payments: PaymentService,
    private readonly settlement: SettlementService,
  ) {
    this.ledger = new LedgerWriter(ctx.store.payments);
  }

  view(a: ApprovalDoc) {
    return approvalView(a);
  }

  /** Pending approvals of the owner's agents, oldest first (expired ones are closed first). */
  async list(ownerAddress: string, agentAddress?: string) {
    await this.expire();
    const filter: Record<string, unknown> = { ownerAddress, status: "pending" };
    if (agentAddress) filter.agentAddress = agentAddress;
    const docs = await this.ctx.store.approvals.find(filter).sort({ requestedAt: 1 }).limit(500).toArray();
    return { approvals: docs.map((a) => this.view(a)) };
  }

  /** Closes pending approvals past their TTL as `expired` (ledger too). */
  async expire(now = new Date()): Promise<number> {
    const due = await this.ctx.store.approvals.find({ status: "pending", expiresAt: { $lte: now } }).toArray();
    let n = 0;
    for (const a of due) {
      const r = await this.ctx.store.approvals.updateOne(
        { approvalId: a.approvalId, status: "pending" },
        { $set: { status: "expired", resolvedAt: now } },
      );
      if (r.modifiedCount === 1) {
        n++;
        await this.ledger.update(a.txnId, { status: "expired", phase: "done", reason: "approval_expired", updatedAt: now });
        this.ctx.webhooks.later(() => alertApproval(this.ctx, "approval.expired", a));
      }
    }
    return n;
  }

  /**
   * On start-up (after payments are recovered): an approval left `approving` by a crash takes the outcome of its
   * payment, or goes back to `pending` when its payment never started.
   */
  async recover(): Promise<number> {
    const stuck = await this.ctx.store.approvals.find({ status: "approving" }).toArray();
    let resolved = 0;
    for (const a of stuck) {
      // Under the agent's lock (across instances): an approval another live instance is carrying out is finished by it.
      await this.ctx.agentLock.run(a.agentAddress, async () => {
        const payment = await this.ctx.store.payments.findOne({ txnId: a.txnId });
        // A payment in flight is settlement recovery's, which gives the approval its outcome.
        if (payment && payment.phase !== "done" && payment.phase !== "quoted") return;
        const next = payment?.status === "approved" ? "approved" : payment?.status === "pending" || !payment ? "pending" : "failed";
        const res = await this.ctx.store.approvals.updateOne(
          { approvalId: a.approvalId, status: "approving" },
          { $set: { status: next, resolvedAt: next === "pending" ? null : new Date() } },
        );
        resolved += res.modifiedCount;
      });
    }
    return resolved;
  }

  private async load(principal: Principal, approvalId: string): Promise<ApprovalDoc> {
    if (principal.role !== "owner") throw forbidden("Only the owner may approve or deny payments; an agent cannot approve its own.");
    const a = await this.ctx.store.approvals.findOne({ approvalId });
    if (!a) throw notFound(`Approval ${approvalId} not found.`);
    if (a.ownerAddress !== principal.ownerAddress) throw forbidden(`Approval ${approvalId} belongs to another owner's agent.`);
    if (a.status === "pending" && a.expiresAt.getTime() <= Date.now()) {
      await this.expire();
      throw conflict(`Approval ${approvalId} expired at ${a.expiresAt.toISOString()}.`);
    }
    if (a.status !== "pending") throw conflict(`Approval ${approvalId} is already ${a.status}.`);
    return a;
  }

  private async verifyDecision(a: ApprovalDoc, action: "approve" | "deny", input: ApprovalDecisionRequest): Promise<string> {
    const agent = await this.ctx.store.agents.findOne({ address: a.agentAddress });
    if (!agent || !a.ownerAddress) throw conflict(`Approval ${a.approvalId} has no agent or owner left to decide it.`);
    return this.ctx.signatures.verify({
      kind: "ApprovalDecision",
      domain: policyDomain(this.ctx.config.chainId, agent.policyAddress),
      types: APPROVAL_DECISION_TYPES,
      message: {
        action,
        approvalId: a.approvalId,
        agent: a.agentAddress,
        merchant: a.merchant,
        payTo: a.payTo ?? ZeroAddress,
        amount: BigInt(a.amount),
        timestamp: input.timestamp,
      },
      signature: input.humanSignature,
      expectedSigner: a.ownerAddress,
      timestamp: input.timestamp,
    });
  }

  async deny(principal: Principal, approvalId: string, input: ApprovalDecisionRequest) {
    const a = await this.load(principal, approvalId);
    const digest = await this.verifyDecision(a, "deny", input);
    await this.ctx.signatures.consume("ApprovalDecision", digest);
    const now = new Date();
    const r = await this.ctx.store.approvals.updateOne({ approvalId, status: "pending" }, { $set: { status: "denied", resolvedAt: now } });
    if (r.modifiedCount !== 1) throw conflict(`Approval ${approvalId} was resolved meanwhile.`);
    await this.ledger.update(a.txnId, { status: "denied", phase: "done", reason: "denied_by_owner", updatedAt: now });
    return {
      id: approvalId,
      status: "denied" as const,
      merchant: a.merchant,
      amount: fromBaseUnits(a.amount),
      deniedAt: now.toISOString(),
    };
  }

  async approve(principal: Principal, approvalId: string, input: ApprovalDecisionRequest) {
    const first = await this.load(principal, approvalId);
    const digest = await this.verifyDecision(first, "approve", input);
    return this.ctx.agentLock.run(first.agentAddress, async (lock) => {
      if (lock.tookOver) await this.settlement.awaitQuiet(first.agentAddress);
      // Claim it: of two concurrent approvals (or an approve racing a deny) exactly one proceeds.
      const a = await this.ctx.store.approvals.findOneAndUpdate(
        { approvalId, status: "pending" },
        { $set: { status: "approving" } },
        { returnDocument: "after" },
      );
      if (!a) throw conflict(`Approval ${approvalId} was resolved meanwhile.`);
      try {
        return await this.execute(a, digest, input, lock);
      } catch (err) {
        // The approval follows its payment: nothing authorised yet (a seller or facilitator outage, a price change)
        // -> pending again, for the owner to retry or deny; otherwise the payment's outcome.
        const payment = await this.ctx.store.payments.findOne({ txnId: a.txnId });
        const next =
          !payment || payment.status === "pending"
            ? "pending"
            : payment.status === "approved"
              ? "approved"
              : payment.status === "processing"
                ? "approving"
                : "failed";
        if (next !== "approving") {
          await this.ctx.store.approvals.updateOne(
            { approvalId, status: "approving" },
            { $set: { status: next, resolvedAt: next === "pending" ? null : new Date() } },
          );
        }
        throw err;
      }
    });
  }

  private async execute(a: ApprovalDoc, digest: string, input: ApprovalDecisionRequest, lock: Fence) {
    const agent = await this.ctx.store.agents.findOne({ address: a.agentAddress });
    if (!agent) throw notFound(`Agent ${a.agentAddress} of approval ${a.approvalId} is unknown.`);
    const pc: PaymentContext = {
      agent,
      merchant: a.merchant,
      serviceUrl: a.serviceUrl,
      intent: a.intent,
      seller: { url: a.serviceUrl, method: a.method, body: typeof a.requestBody === "string" ? JSON.parse(a.requestBody) : a.requestBody },
    };
    const quote = await this.payments.quote(pc);
    if (!quote) throw appError("unsupported_payment");
    if (quote.amount > BigInt(a.amount)) {
      throw appError(
        "price_changed",
        `The seller's price rose from ${fromBaseUnits(a.amount)} to ${fromBaseUnits(quote.amount)} USDC; the approval stays pending. Deny it, or let the agent ask again.`,
        { details: { approvedAmount: fromBaseUnits(a.amount), newAmount: fromBaseUnits(quote.amount) } },
      );
    }
    // The owner approved this amount: a decision that requires approval goes on, with the approval, to the chain.
    // Read first: a refusal here (no policy, an operator the owner moved away) sends nothing and leaves the owner's
    // signature usable, like a price rise. It is used up before anything is sent.
    // The owner signed the payee too: a seller that moved its payTo since is refused here, before anything is sent.
    if (a.payTo && quote.requirement.payTo.toLowerCase() !== a.payTo.toLowerCase()) {
      throw appError(
        "payee_changed",
        `The seller now asks to be paid at ${quote.requirement.payTo}, not ${a.payTo} as the owner approved; the approval stays pending. Deny it, or let the agent ask again.`,
        { details: { approvedPayTo: a.payTo, newPayTo: quote.requirement.payTo } },
      );
    }
    const decision = await this.decisions.evaluate(agent, a.merchant, quote.amount, quote.requirement.payTo);
    await this.ctx.signatures.consume("ApprovalDecision", digest);
    const refused = { approvalId: a.approvalId, txnId: a.txnId };
    let outcome: PayOutcome;
    const swap = decision.status === "block" ? null : await this.payments.swapStep(pc, decision.swap, quote.amount, refused);
    if (decision.status === "block") {
      outcome = await this.payments.block(pc, { amount: quote.amount, reason: decision.reason, proof: decision.proof, ...refused });
    } else if (swap && "blocked" in swap) {
      outcome = swap.blocked;
    } else {
      outcome = await this.settlement.execute({
        ...swap,
        txnId: a.txnId,
        base: { ...this.payments.ledgerBase(pc, a.approvalId), createdAt: a.requestedAt },
        seller: pc.seller,
        quote,
        proof: decision.proof,
        dailyBudget: decision.policy.dailyBudget,
        agent,
        fences: [lock],
        approval: { approvalId: a.approvalId, amount: BigInt(a.amount), timestamp: input.timestamp, signature: input.humanSignature },
      });
    }
    if (outcome.status !== "approved") {
      await this.ctx.store.approvals.updateOne({ approvalId: a.approvalId }, { $set: { status: "failed", resolvedAt: new Date() } });
      const reason = outcome.status === "blocked" ? outcome.reason : outcome.status;
      throw appError("blocked", `The approved payment was blocked on-chain: ${reason}.`, { details: outcome });
    }
    const b = outcome;
    await this.ctx.store.approvals.updateOne({ approvalId: a.approvalId }, { $set: { status: "approved", resolvedAt: new Date() } });
    return {
      id: a.approvalId,
      status: "approved" as const,
      txHash: b.txHash,
      amount: b.amount,
      merchant: b.merchant,
      settledAt: b.settledAt,
      transactionId: a.txnId,
      response: b.response,
      ...(b.swap ? { swap: b.swap } : {}),
    };
  }
}
