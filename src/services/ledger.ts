/** The ledger: every payment attempt as a `txn_...` entry, newest first. */
import type { Filter } from "mongodb";
import { fromBaseUnits } from "../amounts";
import type { LedgerStatus, PaymentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import { swapView } from "./swap";
import type { Principal } from "./keys";

export class LedgerService {
  constructor(private readonly ctx: ServiceContext) {}

  view(doc: PaymentDoc) {
    return {
      id: doc.txnId,
      agentAddress: doc.agentAddress,
      merchant: doc.merchant,
      amount: fromBaseUnits(doc.amount),
      currency: doc.currency,
      intent: doc.intent,
      status: doc.status,
      txHash: doc.txHash,
      createdAt: doc.createdAt.toISOString(),
      reason: doc.reason,
      approvalId: doc.approvalId,
      paymentId: doc.paymentId,
      payTo: doc.paymentId ? doc.payTo : null,
      authorizeTxHash: doc.authorizeTxHash ?? null,
      releaseTxHash: doc.releaseTxHash ?? null,
      serviceUrl: doc.serviceUrl,
      settledAt: doc.settledAt ? doc.settledAt.toISOString() : null,
      explorerUrl: doc.txHash ? `${this.ctx.config.explorerUrl}/tx/${doc.txHash}` : null,
      onchain: doc.onchain,
      swap: swapView(doc.swap),
    };
  }

  /** Entries visible to the principal (its agent, or the owner's agents), filtered and paginated. */
  async list(principal: Principal, q: { address?: string; status?: LedgerStatus; limit: number; offset: number }) {
    const filter: Filter<PaymentDoc> = {};
    if (principal.role === "agent") filter.agentAddress = principal.agentAddress;
    else if (principal.role === "owner") filter.ownerAddress = principal.ownerAddress;
    if (q.address) filter.agentAddress = q.address;
    if (q.status) filter.status = q.status;
    const [docs, total] = await Promise.all([
      this.ctx.store.payments.find(filter).sort({ createdAt: -1, _id: -1 }).skip(q.offset).limit(q.limit).toArray(),
      this.ctx.store.payments.countDocuments(filter),
    ]);
    return { transactions: docs.map((d) => this.view(d)), total, limit: q.limit, offset: q.offset };
  }

  async get(txnId: string): Promise<PaymentDoc | null> {
    return this.ctx.store.payments.findOne({ txnId });
  }
}
