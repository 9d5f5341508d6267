/**
 * The steps of settlement that own a payment's ledger document: its lease, every write to it (and the owner's alert
 * when it is done), the agent's signature, and finishing a payment that did not settle from what the chain says.
 * SettlementService (settlement.ts) runs the flows on top of these.
 */
import { PolicyOps } from "../chain/policyOps";
import { PaymentState } from "../chain/reasons";
import { LeaseLostError, upstreamError } from "../errors";
import type { Fence } from "../store/leases";
import type { AgentDoc, PaymentDoc } from "../store/documents";
import { type LedgerUpdate, LedgerWriter } from "../store/ledger";
import { type Quote, type SignedPayment, sellerOptions, signPayment, walletPayer } from "../x402/buyer";
import { alertPaymentDone } from "./alerts";
import type { ServiceContext } from "./context";
import { transferOf } from "./outcomes";

export abstract class SettlementSteps {
  readonly ops: PolicyOps;
  protected readonly ledger: LedgerWriter;

  constructor(protected readonly ctx: ServiceContext) {
    this.ops = new PolicyOps(ctx.chain);
    this.ledger = new LedgerWriter(ctx.store.payments);
  }

  protected sellerOptions() {
    const c = this.ctx.config;
    return sellerOptions(c);
  }

  /**
   * Commits payment `txnId`, whose ledger document (phase "authorizing") is already written, to the leases it runs
   * under, before any transaction is sent; when one was lost, undoes the document and stops (nothing paid).
   *
   * Why this closes the stall window rather than narrowing it: the document is written first and the fences are
   * checked after, while an instance that takes a lease over checks the other side after it took it: the Idempotency-Key
   * in the same document (a take-over needs no payment committed to the key; see idempotency.ts), the agent's lock by
   * awaiting the agent's payments in flight (awaitQuiet) once it has the lock. Every step is one atomic operation on
   * one document, so in any order they run, either the stalled holder's check sees the lease moved on (it stops before
   * sending anything), or the new holder sees its payment in flight (and waits for it, or answers the key with it).
   * How long the stall was does not matter. The budget itself is the contract's, whatever happens here.
   * A stall between this commit and the authorisation longer than PAYMENT_LEASE_MS lets recovery claim the payment:
   * recovery then voids its paymentId on-chain (voidUnsent), after which the stalled run's authorisation can only
   * revert, and calls the payment failed at once. Only where the void cannot be sent does it wait for the chain to
   * pass the transfer's validBefore (pastValidity), from when on the contract refuses to authorise it too.
   */
  protected async commit(txnId: string, fences: Fence[], undo: () => Promise<unknown>): Promise<void> {
    if (!fences.length) return;
    const held = await Promise.all(fences.map((f) => f.hold(txnId)));
    if (held.every(Boolean)) return;
    await Promise.all(fences.map(async (f, i) => (held[i] ? f.letGo?.(txnId) : undefined)));
    await undo();
    this.ctx.logger.warn({ txnId }, "a lease this payment ran under was taken over (this instance stalled); stopped before paying");
    throw new LeaseLostError();
  }

  /**
   * Voids the paymentId of a payment whose authorisation was never seen mined: an interrupted run may or may not have
   * sent it, and a stalled one may still send it. Once the void lands no authorisation of it can, so the payment is
   * failed here, at once (nothing was paid, nothing counted). "recorded": the paymentId had a record already (an
   * authorisation landed first, or an earlier void): finishUnsettled decides from it. "unavailable": no void could be
   * sent (a policy implementation from before it, or the node): the caller falls back to what it did without one.
   */
  protected async voidUnsent(doc: PaymentDoc & { paymentId: string }): Promise<"voided" | "recorded" | "unavailable"> {
    let r;
    try {
      r = await this.ops.voidUnrecorded(doc.policyAddress, doc.paymentId);
    } catch (err) {
      this.ctx.logger.warn({ err, txnId: doc.txnId }, "voidUnrecordedPayment failed");
      return "unavailable";
    }
    await this.ctx.gas.charge(doc.ownerAddress, r.receipt);
    if (r.voided) {
      // A refused payment keeps its "blocked" answer.
      const refused = doc.status === "blocked";
      await this.update(doc.txnId, {
        status: refused ? "blocked" : "failed",
        phase: "done",
        reason: refused ? doc.reason : "not_authorized",
        detail: refused ? (doc.detail ?? null) : VOIDED_DETAIL,
        voidTxHash: r.txHash,
      });
      return "voided";
    }
    const state = await this.ops.paymentState(doc.policyAddress, doc.paymentId);
    return state === PaymentState.None ? "unavailable" : "recorded";
  }

  /**
   * Whether the chain is past the payment's validBefore: no authorisation of its transfer can land any more (the
   * contract refuses an expired transfer), so a run that stalled before authorising can no longer pay it. The block is
   * read before the payment's state is: an authorisation that landed in time is then seen (finishUnsettled).
   *
   * Judged by the later of the latest block's time and the pending block's, the time the node would give the next
   * block: a chain that mines only on transactions (the embedded one, a quiet devnet) makes no block once traffic stops,
   * and by the latest block alone its clock would stand still and the payment wait for good. Nodes that do not build a
   * pending block answer it with the latest (op-geth without --rollup.computependingblock, as Base's RPC nodes run), or
   * with nothing usable; then the latest block decides, as before.
   */
  protected async pastValidity(doc: PaymentDoc): Promise<boolean> {
    if (doc.validBefore == null) return true;
    const provider = this.ctx.chain.provider;
    const [latest, pending] = await Promise.all([
      provider.getBlock("latest"),
      provider.send("eth_getBlockByNumber", ["pending", false]).then(blockTime, () => null),
    ]);
    const now = Math.max(latest?.timestamp ?? 0, pending ?? 0);
    return now >= doc.validBefore;
  }

  /** Until when the instance working on a payment owns it; recovery leaves it alone before then. */
  protected lease(): Date {
    return new Date(Date.now() + this.ctx.config.paymentLeaseMs);
  }

  protected async update(txnId: string, set: LedgerUpdate): Promise<void> {
    const all = { ...set, updatedAt: new Date(), leaseUntil: this.lease(), instanceId: this.ctx.instanceId };
    if (set.phase !== "done") return this.ledger.update(txnId, all);
    // The one place a payment's outcome is written: its owner's alert goes out from here, with the entry as written.
    const done = await this.ledger.finish(txnId, all);
    if (done) this.ctx.webhooks.later(() => alertPaymentDone(this.ctx, txnId, done));
  }

  /**
   * The agent wallet's EIP-3009 authorisation for the quote, signed by the agent's signing key. It is worth nothing
   * until the policy authorises exactly this transfer on-chain (the wallet answers ERC-1271 for it only then), and it
   * stays in memory until then.
   */
  sign(agent: AgentDoc, quote: Quote): Promise<SignedPayment> {
    return this.ctx.wallets
      .signer(agent.signerAddress)
      .then((key) => signPayment(walletPayer(agent.address, key), quote, this.ctx.config.maxPaymentValiditySeconds));
  }

  /**
   * After authorisation, when the payment did not (visibly) settle: release it on-chain, which kills the
   * authorisation for good (the wallet refuses its digest from then on) and gives the budget back. The contract
   * refuses the release once USDC has used the nonce: then it settled, and the payment is approved after all.
   */
  protected async finishUnsettled(txnId: string, detail: string): Promise<{ state: "settled" | "released"; txHash: string | null }> {
    const doc = await this.ctx.store.payments.findOne({ txnId });
    if (!doc?.paymentId) throw new Error(`payment ${txnId} has no paymentId`);
    const { agentAddress: agent, paymentId } = doc;
    let releaseTx: string | null = null;
    let settled = false;
    if ((await this.ops.paymentState(doc.policyAddress, paymentId)) === PaymentState.Authorized) {
      try {
        const r = await this.ops.release(doc.policyAddress, paymentId, transferOf(doc));
        if (r.settled) settled = true;
        else {
          releaseTx = r.txHash;
          await this.ctx.gas.charge(doc.ownerAddress, r.receipt);
        }
      } catch (err) {
        this.ctx.logger.warn({ err, txnId }, "releasePayment failed; reading the outcome from chain");
        if (!(await this.ops.authorizationUsed(agent, paymentId))) {
          // Neither settled nor released: leave it in flight (lease kept) for the recovery sweep to finish.
          throw upstreamError(
            "The payment could not be finished yet; it stays reserved and is resolved automatically. Do not retry; check the ledger.",
          );
        }
        settled = true;
      }
    } else {
      // Not authorised any more (released before an interruption) or never: only a settlement could have used it.
      settled = await this.ops.authorizationUsed(agent, paymentId);
    }
    if (settled) {
      const txHash = await this.ops.settlementTx(agent, paymentId, doc.authorizeBlock ?? 0);
      await this.update(txnId, { status: "approved", phase: "done", txHash, settledAt: new Date(), detail });
      return { state: "settled", txHash };
    }
    // A refused payment whose stray authorisation is released here keeps its "blocked" answer.
    const refused = doc.status === "blocked";
    await this.update(txnId, {
      status: refused ? "blocked" : "failed",
      phase: "done",
      reason: refused ? doc.reason : "settlement_failed",
      detail: refused ? (doc.detail ?? null) : detail,
      releaseTxHash: releaseTx ?? doc.releaseTxHash ?? null,
    });
    return { state: "released", txHash: null };
  }
}

const VOIDED_DETAIL = "voided on-chain after an interruption: its authorisation had not landed, and now never can; nothing was paid";

/** A raw block's timestamp (ethers cannot format a pending block: its number is null), or null. */
function blockTime(raw: unknown): number | null {
  const t = (raw as { timestamp?: unknown } | null)?.timestamp;
  if (typeof t !== "string" || !/^0x[0-9a-f]+$/i.test(t)) return null;
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : null;
}
