/** The ledger: every payment attempt as a `txn_...` entry, newest first. */
import type { Filter } from "mongodb";
import type { LedgerStatus, PaymentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import { paymentView } from "./presenters";
import type { Principal } from "./keys";

export class LedgerService {
  constructor(private readonly ctx: ServiceContext) {}

  view(doc: PaymentDoc) {
    return paymentView(doc, this.ctx.config.explorerUrl);
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
