/**
 * Owner approvals of payments above the threshold. Approve and deny need the owner key and the owner's EIP-712
 * ApprovalDecision signature; approve also carries that signature on-chain (the contract checks it again).
 */
import { ZeroAddress } from "ethers";
import { fromBaseUnits } from "../amounts";
import { APPROVAL_DECISION_TYPES, policyDomain } from "../chain/typedData";
import { conflict, forbidden, notFound } from "../errors";
import type { ApprovalDecisionRequest } from "../schemas/payments";
import type { ApprovalDoc } from "../store/documents";
import type { PaymentService } from "../payments";
import type { ServiceContext } from "./context";
import type { TypedSignatureCheck } from "./signatures";
import type { Principal } from "../principal";
import { alertApproval } from "./alerts";
import { approvalView } from "./presenters";

export class ApprovalService {
  constructor(
    private readonly ctx: ServiceContext,
    /** The payment's room: an approved payment is a payment (src/payments/approve.ts). */
    private readonly payments: PaymentService,
  ) {}

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
        await this.payments.closeWaiting(a.txnId, "expired", now);
        this.ctx.telemetry.outcome("expired", "approval_expired");
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

  /** The owner's ApprovalDecision over exactly this approval, as the signature check reads it. */
  private async decision(a: ApprovalDoc, action: "approve" | "deny", input: ApprovalDecisionRequest): Promise<TypedSignatureCheck> {
    const agent = await this.ctx.store.agents.findOne({ address: a.agentAddress });
    if (!agent || !a.ownerAddress) throw conflict(`Approval ${a.approvalId} has no agent or owner left to decide it.`);
    return {
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
    };
  }

  async deny(principal: Principal, approvalId: string, input: ApprovalDecisionRequest) {
    const a = await this.load(principal, approvalId);
    await this.ctx.signatures.verifyAndConsume(await this.decision(a, "deny", input));
    const now = new Date();
    const r = await this.ctx.store.approvals.updateOne({ approvalId, status: "pending" }, { $set: { status: "denied", resolvedAt: now } });
    if (r.modifiedCount !== 1) throw conflict(`Approval ${approvalId} was resolved meanwhile.`);
    await this.payments.closeWaiting(a.txnId, "denied", now);
    this.ctx.telemetry.outcome("denied", "denied_by_owner");
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
    // Verified now; used up only right before anything is sent (a price rise or a refusal first leaves it usable).
    const digest = await this.ctx.signatures.verify(await this.decision(first, "approve", input));
    return this.payments.approve(first, input, () => this.ctx.signatures.consume("ApprovalDecision", digest));
  }
}
