/** The ledger: every payment attempt as a `txn_...` entry, newest first. */
import type { Filter } from "mongodb";
import type { LedgerStatus, PaymentDoc } from "../store/documents";
import type { ServiceContext } from "./context";
import { paymentView, paymentWhere } from "./presenters";
import type { Principal } from "../principal";

export class LedgerService {
  constructor(private readonly ctx: ServiceContext) {}

  view(doc: PaymentDoc) {
    return paymentView(doc, paymentWhere(this.ctx, doc));
  }

  /** Entries visible to the principal (its agent, or the owner's agents), filtered and paginated. */
  async list(principal: Principal, q: { address?: string; status?: LedgerStatus; limit: number; offset: number }) {
    const filter: Filter<PaymentDoc> = {};
    if (principal.role === "agent") filter.agentAddress = principal.agentAddress;
    else if (principal.role === "owner") filter.ownerAddress = principal.ownerAddress;
    if (q.address) filter.agentAddress = q.address;
    if (q.status) filter.status = q.status;
    // The page and the total are asked side by side (one round trip of waiting, not two). A page short of the limit
    // that is not past the end is the end: it tells the total itself, and the count is not waited for.
    const page = this.ctx.store.payments.find(filter).sort({ createdAt: -1, _id: -1 }).skip(q.offset).limit(q.limit).toArray();
    const counted = this.ctx.store.payments.countDocuments(filter);
    counted.catch(() => undefined); // not awaited when the page tells the total
    const docs = await page;
    const ends = docs.length < q.limit && (docs.length > 0 || q.offset === 0);
    // The count may run before the page: never a total short of the entries shown (an empty page shows none).
    const shown = docs.length > 0 ? q.offset + docs.length : 0;
    const total = ends ? shown : Math.max(await counted, shown);
    return { transactions: docs.map((d) => this.view(d)), total, limit: q.limit, offset: q.offset };
  }

  async get(txnId: string): Promise<PaymentDoc | null> {
    return this.ctx.store.payments.findOne({ txnId });
  }
}
