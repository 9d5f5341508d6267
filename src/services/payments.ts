/**
 * POST /pay: the policy first (before any value moves), then the seller's quote, the contract's simulation, and
 * one of three outcomes: blocked (recorded on-chain as PaymentBlocked), pending (waits for the owner) or approved
 * (authorised on-chain, paid through x402, settled). Payments of one agent run one at a time.
 */
import { randomBytes } from "node:crypto";
import { fromBaseUnits, toBaseUnits } from "../amounts";
import { BLOCKED_RECORD_PAY_TO, type TransferInput } from "../chain/policyOps";
import { blockMessage, blockedOutcome, newApprovalId, newTxnId } from "./outcomes";
import { type PaymentContext, fencesOf, merchantOf } from "./paymentContext";
import { phaseTimer } from "../util/timer";
import { AppError, LeaseLostError, appError, errorBody, transient, upstreamError } from "../errors";
import type { Fence } from "../store/leases";
import { type IdempotencyService, idempotencyCaller } from "./idempotency";
import type { Principal } from "../principal";
import { ANY_PAYEE, type AllowlistProof, NO_LEAF } from "../policy/allowlist";
import type { PayAnswer, PayBlocked, PayOutcome, PayPending, PayRequest } from "../schemas/payments";
import type { AgentDoc, ApprovalDoc, PaymentDoc } from "../store/documents";
import { followAgentOwner } from "../store/owners";
import { type LedgerBase, LedgerWriter, ledgerEntry } from "../store/ledger";
import type { PaymentRequired } from "@x402/core/types";
import { type Quote, type SellerRequest, SellerError, pickQuote, readPaymentRequired, requestSeller, sellerOptions } from "../x402/buyer";
import type { ServiceContext } from "./context";
import type { ReasonName } from "../chain/reasons";
import { type PolicyDecisions, noPolicyError } from "./decision";
import { alertApproval, alertPaymentDone } from "./alerts";
import { type ExecuteInput, type SettlementService, sellerAppError } from "./settlement";
import type { SwapCheck, SwapService } from "./swap";

const BLOCK_DEDUPE_MS = 60_000;
/** Retry-After of a payment refused before paying because its seller could not be reached. */
const SELLER_RETRY_S = 5;
/** Retry-After of a payment refused because too many of the agent's wait for its owner. */
const PENDING_RETRY_S = 60;
/** Pending approvals one agent may have at a time (a stolen agent key must not bury its owner's queue). */
export const MAX_PENDING_APPROVALS = 20;

/** A refused payment, as PaymentService.block records it. */
export interface Refusal {
  amount: bigint;
  /** A reason of the table (src/chain/reasons.ts); "blocked" when the contract blocked without naming one. */
  reason: ReasonName | "blocked";
  /** The allowlist proof for the on-chain record (PaymentBlocked); null for a refusal not recorded on-chain. */
  proof: AllowlistProof | null;
  /** An approved payment refused after all: its approval and the ledger entry it already has. */
  approvalId?: string | null;
  txnId?: string;
  detail?: string;
  /** The seller's payTo, when a quote named one: what the on-chain record pays (a refusal never settles anyway). */
  payTo?: string;
}

export class PaymentService {
  private readonly ledger: LedgerWriter;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly decisions: PolicyDecisions,
    private readonly settlement: SettlementService,
    private readonly idempotency: IdempotencyService,
    private readonly swaps: SwapService,
  ) {
    this.ledger = new LedgerWriter(ctx.store.payments);
  }

  /**
   * POST /pay and the MCP pay tool: a payment, run once per Idempotency-Key when there is one. Every refusal or
   * failure the service explains is an answer, kept under the key like a success, unless it is transient
   * (`retryable`: nothing was paid and it may go otherwise later), which frees the key (idempotency.ts).
   */
  async payOnce(principal: Principal, agent: AgentDoc, input: PayRequest, key?: string): Promise<PayAnswer & { replayed: boolean }> {
    const run = async (scope?: string, keyFence?: Fence): Promise<PayAnswer> => {
      try {
        return { outcome: await this.pay(agent, input, scope, keyFence) };
      } catch (err) {
        // A lost lease paid nothing and is no answer to keep: the key is another run's, or free to run again.
        if (err instanceof AppError && !(err instanceof LeaseLostError))
          return { error: errorBody(err), ...(err.headers ? { headers: err.headers } : {}) };
        throw err;
      }
    };
    return key ? this.idempotency.run(idempotencyCaller(principal), key, input, run) : { ...(await run()), replayed: false };
  }

  async pay(agent: AgentDoc, input: PayRequest, idempotencyScope?: string, keyFence?: Fence): Promise<PayOutcome> {
    const merchant = merchantOf(input.serviceUrl);
    // As URL parsing spells it (punycode host, no look-alike characters): what the owner reads is what is requested.
    const serviceUrl = new URL(input.serviceUrl).href;
    const pc: PaymentContext = {
      agent,
      idempotencyScope,
      merchant,
      serviceUrl,
      intent: input.intent,
      seller: { url: serviceUrl, method: input.method, body: input.method === "POST" ? input.body : undefined },
    };
    return this.ctx.agentLock.run(agent.address, async (lock) => {
      if (lock.tookOver) await this.settlement.awaitQuiet(agent.address);
      return this.payLocked({ ...pc, fences: { lock, key: keyFence } }, toBaseUnits(input.maxAmount));
    });
  }

  private async payLocked(pc: PaymentContext, maxAmount: bigint): Promise<PayOutcome> {
    const timer = phaseTimer();
    // The owner's gas allowance is read beside the policy and the quote; a 429 still comes only where it did (below,
    // before anything is signed or sent), and never for a payment refused before.
    const gasChecked = this.ctx.gas.check(pc.agent.ownerAddress);
    gasChecked.catch(() => undefined);
    const admission = await this.decisions.admit(pc.agent, pc.merchant, { fresh: false });
    timer.mark("policy");
    if (admission.status === "no_policy") throw noPolicyError(pc.agent);
    await this.decisions.checkOperator(pc.agent, admission.policy, admission.status === "admitted" && admission.cached);
    if (admission.status === "not_allowed") return this.block(pc, { amount: maxAmount, reason: "merchant_not_allowed", proof: NO_LEAF });

    // Simulated at the caller's ceiling beside the seller's quote: every limit only tightens as the amount grows, so a
    // price under a ceiling the policy allows is allowed too, and the usual payment waits for no simulation after it.
    const atCeiling = this.decisions.atCeiling(pc.agent, pc.merchant, admission, maxAmount);
    const quote = await this.quote(pc);
    timer.mark("quote");
    if (!quote) return this.block(pc, { amount: maxAmount, reason: "unsupported_payment", proof: null });
    if (quote.amount > maxAmount) return this.block(pc, { amount: quote.amount, reason: "max_amount_exceeded", proof: null });

    // Signing overlaps any simulation left; a signature the policy refuses is dropped, never sent anywhere.
    const signed = this.settlement.sign(pc.agent, quote);
    signed.catch(() => undefined);
    // The wallet's USDC is read in the simulation's call (a swap quote, only when it lacks some, alongside it).
    const decision = await this.decisions.decide(pc.agent, pc.merchant, admission, quote.amount, quote.requirement.payTo, atCeiling);
    timer.mark("simulate");
    // Read again after a cached refusal: what it found is checked like the first read.
    if (decision.policy !== admission.policy) await this.decisions.checkOperator(pc.agent, decision.policy, false);
    if (decision.status === "block") {
      return this.block(pc, { amount: quote.amount, reason: decision.reason, proof: decision.proof, payTo: quote.requirement.payTo });
    }
    if (decision.status === "requires_approval") return this.requestApproval(pc, quote, maxAmount);
    const swap = await this.swapStep(pc, decision.swap, quote.amount);
    timer.mark("swapQuote");
    if ("blocked" in swap) return swap.blocked;
    const paid = this.settlement.execute({
      txnId: newTxnId(),
      base: this.ledgerBase(pc, null),
      seller: pc.seller,
      quote,
      proof: decision.proof,
      dailyBudget: decision.policy.dailyBudget,
      timer,
      signed,
      fences: fencesOf(pc),
      gasChecked,
      ...swap,
    });
    // A failed payment reads the policy (and the operator set) again next time: a stale copy (another operator, a key
    // taken out of the set) fails once, not in a loop.
    paid.catch(() => this.decisions.forget(pc.agent));
    return paid;
  }

  /**
   * Policy, then swap, then x402 settlement: a shortfall nothing can buy is refused (insufficient_funds, off-chain)
   * before any transaction; otherwise what execute runs once the payment is authorised, if anything.
   */
  async swapStep(
    pc: PaymentContext,
    check: Promise<SwapCheck>,
    amount: bigint,
    approval: Pick<Refusal, "approvalId" | "txnId"> = {},
  ): Promise<{ blocked: PayBlocked } | Pick<ExecuteInput, "swap">> {
    const c = await check;
    if (c.kind === "refuse") {
      return { blocked: await this.block(pc, { amount, reason: "insufficient_funds", proof: null, detail: c.detail, ...approval }) };
    }
    if (c.kind === "none") return {};
    const a = pc.agent;
    const target = {
      agent: a.address,
      ownerAddress: a.ownerAddress,
      policyAddress: a.policyAddress,
      merchant: pc.merchant,
      intent: pc.intent,
    };
    return { swap: (p) => this.swaps.execute({ ...p, ...target }) };
  }

  /** The seller's x402 quote; null when it offers no exact USDC payment on this chain. */
  async quote(pc: PaymentContext): Promise<Quote | null> {
    return (await this.sellerQuote(pc.seller, pc.agent.address)).quote;
  }

  /**
   * Asks the seller for its 402 without paying: every payment it accepts, and the one this service would pay for
   * `payer` (null when none is an exact USDC payment on this chain). Same request rules as a payment (SSRF guard,
   * https unless allowed, bounded time and size, same-host redirects).
   */
  async sellerQuote(seller: SellerRequest, payer: string): Promise<{ paymentRequired: PaymentRequired; quote: Quote | null }> {
    const c = this.ctx.config;
    const opts = sellerOptions(c);
    try {
      const res = await requestSeller(seller, opts);
      if (res.status !== 402) {
        if (res.status >= 200 && res.status < 300) {
          throw appError("payment_not_required", `The seller answered HTTP ${res.status} without asking for payment; nothing was paid.`);
        }
        const wrong = upstreamError(`The seller answered HTTP ${res.status} instead of an x402 payment requirement (402).`, {
          sellerStatus: res.status,
        });
        // A seller down or busy (5xx, 429, 408) may answer later; another status is its answer.
        throw res.status >= 500 || res.status === 429 || res.status === 408 ? transient(wrong, SELLER_RETRY_S) : wrong;
      }
      const paymentRequired = readPaymentRequired(res);
      return { paymentRequired, quote: pickQuote(paymentRequired, { ...opts, payer }) };
    } catch (err) {
      // Before anything is signed or sent: a seller out of reach is transient (the same key pays once it is back).
      if (err instanceof SellerError) {
        const e = sellerAppError(err);
        throw err.code === "seller_unreachable" || err.code === "seller_timeout" ? transient(e, SELLER_RETRY_S) : e;
      }
      throw err;
    }
  }

  ledgerBase(pc: PaymentContext, approvalId: string | null): LedgerBase {
    return {
      agentAddress: pc.agent.address,
      ownerAddress: pc.agent.ownerAddress,
      policyAddress: pc.agent.policyAddress,
      merchant: pc.merchant,
      serviceUrl: pc.serviceUrl,
      currency: "USDC" as const,
      intent: pc.intent,
      approvalId,
      ...(pc.idempotencyScope ? { idempotencyScope: pc.idempotencyScope } : {}),
    };
  }

  /**
   * A refused payment: policy reasons are recorded on-chain (PaymentBlocked), the caller's own ceiling and an
   * unsupported quote are not. An identical block within 60 s is answered from the first record (gas).
   */
  async block(pc: PaymentContext, refusal: Refusal): Promise<PayBlocked> {
    const { amount, reason, proof, approvalId = null, txnId, detail } = refusal;
    const since = new Date(Date.now() - BLOCK_DEDUPE_MS);
    // Only an identical refusal (same merchant, amount, reason, and payee for a payee refusal) shares an on-chain
    // record: an entry never points at a PaymentBlocked of another amount, which an audit of the ledger would flag.
    const sameRefusal = {
      agentAddress: pc.agent.address,
      merchant: pc.merchant,
      amount: amount.toString(),
      reason,
      status: "blocked" as const,
      ...(reason === "payee_not_allowed" ? { refusedPayTo: refusal.payTo ?? null } : {}),
    };
    const previous = txnId
      ? null
      : await this.ctx.store.payments.findOne({ ...sameRefusal, createdAt: { $gte: since } }, { sort: { createdAt: -1 } });
    let txHash: string | null = null;
    let blockNumber: number | null = null;
    let finalReason: string = reason;
    let capped = false;
    // A record authorised on-chain whose release failed: the entry keeps what recovery needs to release it.
    // (Declared with `as`: it is set inside a callback, where TypeScript's narrowing of `let` does not look.)
    let stray = null as { paymentId: string; transfer: TransferInput } | null;
    let cappedBy = `more than ${this.ctx.config.blockedOnchainPerHour} blocked attempts this hour`;
    if (previous) {
      // Every attempt gets its own ledger entry; only the on-chain record is shared with the first one.
      txHash = previous.txHash;
      blockNumber = previous.onchain.blockNumber;
    } else if (proof) {
      capped = (await this.onchainBlocksLeft(pc.agent.address)) <= 0;
      const gasLeft = await this.ctx.gas.check(pc.agent.ownerAddress).then(
        () => true,
        () => false,
      );
      if (!gasLeft && !capped) {
        capped = true;
        cappedBy = "the owner's operator gas allowance for today is spent";
      }
      if (!capped) {
        const paymentId = "0x" + randomBytes(32).toString("hex");
        // The record pays the seller's payTo when a quote named one (so the contract judges the payee as it would the
        // payment), else the leaf's payee, else nobody: nothing may ever settle it (it is not authorised anyway, and a
        // record authorised after all is released below at once).
        const payTo = refusal.payTo ?? (proof.payee !== ANY_PAYEE ? proof.payee : BLOCKED_RECORD_PAY_TO);
        const transfer = { payTo, amount, validAfter: 0n, validBefore: BigInt(Math.floor(Date.now() / 1000) + 300) };
        const result = await this.settlement.ops
          .authorize(pc.agent.policyAddress, paymentId, pc.merchant, proof, transfer)
          .catch(async (err: unknown) => {
            // Refused all the same (a reverted record: the owner set another operator on-chain, say). Whether anything
            // landed is the chain's to say: the entry keeps the paymentId, and recovery releases a record that did.
            this.ctx.logger.error({ err, agent: pc.agent.address }, "the on-chain record of a refusal failed");
            await this.ctx.gas.charge(pc.agent.ownerAddress, await this.ctx.chain.receiptOfFailure(err));
            stray = { paymentId, transfer };
            capped = true;
            cappedBy = "its transaction failed";
            return null;
          });
        if (result) {
          await this.ctx.gas.charge(pc.agent.ownerAddress, result.receipt);
          if (result.authorized) {
            // The policy changed between simulation and transaction: never keep budget for a payment not made.
            await this.settlement.ops.release(pc.agent.policyAddress, paymentId, transfer).catch((err: unknown) => {
              // Left to the recovery sweep, which releases it (the entry below records the paymentId).
              this.ctx.logger.error({ err, paymentId }, "release of a stray authorisation failed");
              stray = { paymentId, transfer };
            });
          } else {
            finalReason = result.reason ?? reason;
          }
          txHash = result.txHash;
          blockNumber = result.blockNumber;
        }
      }
    }
    const doc = ledgerEntry(txnId ?? newTxnId(), this.ledgerBase(pc, approvalId), {
      amount: amount.toString(),
      status: "blocked",
      phase: stray ? "authorized" : "done",
      reason: finalReason,
      paymentId: stray?.paymentId ?? null,
      ...(stray ? { leaseUntil: new Date(0) } : {}),
      txHash,
      authorizeTxHash: txHash,
      // Kept for a stray authorisation, which recovery releases with these exact fields.
      payTo: stray ? stray.transfer.payTo : null,
      validAfter: stray ? 0 : null,
      validBefore: stray ? Number(stray.transfer.validBefore) : null,
      onchain: { confirmed: previous?.onchain.confirmed ?? false, blockNumber },
      ...(capped ? { detail: `not recorded on-chain: ${cappedBy}` } : detail ? { detail } : {}),
      ...(finalReason === "payee_not_allowed" && refusal.payTo ? { refusedPayTo: refusal.payTo, pinnedPayee: proof?.payee ?? null } : {}),
      ...(previous ? { duplicateOf: previous.txnId } : {}),
    });
    // An approved payment refused after all completes the entry its approval already has.
    await (txnId ? this.ledger.rewrite(doc) : this.ledger.insert(doc));
    // A rewritten entry keeps its first createdAt: the alert reads it as stored.
    this.ctx.webhooks.later(() => alertPaymentDone(this.ctx, doc.txnId, txnId ? undefined : doc));
    return this.blockedOutcome(doc, previous !== null);
  }

  /**
   * Blocked attempts are written on-chain at the operator's cost: a runaway agent gets BLOCKED_ONCHAIN_PER_HOUR of
   * them, then its refusals are kept in the ledger only.
   */
  private async onchainBlocksLeft(agentAddress: string): Promise<number> {
    const hourAgo = new Date(Date.now() - 3_600_000);
    const used = await this.ctx.store.payments.countDocuments({
      agentAddress,
      status: "blocked",
      // An attempt whose record failed (kept with its paymentId) cost the operator gas too.
      $or: [{ txHash: { $ne: null } }, { paymentId: { $ne: null } }],
      duplicateOf: { $exists: false },
      createdAt: { $gte: hourAgo },
    });
    return this.ctx.config.blockedOnchainPerHour - used;
  }

  private blockedOutcome(doc: PaymentDoc, replayed: boolean): PayBlocked {
    const reason = doc.reason ?? "blocked";
    return blockedOutcome({
      reason,
      txHash: doc.txHash,
      amount: doc.amount,
      merchant: doc.merchant,
      intent: doc.intent,
      transactionId: doc.txnId,
      ...(doc.refusedPayTo ? { payTo: doc.refusedPayTo, ...(doc.pinnedPayee ? { pinnedPayee: doc.pinnedPayee } : {}) } : {}),
      message:
        blockMessage(reason) +
        (doc.refusedPayTo
          ? ` (the seller asks to be paid at ${doc.refusedPayTo}; the owner named ${doc.pinnedPayee ?? "another payee"})`
          : "") +
        (doc.reason === "insufficient_funds" && doc.detail ? ` (${doc.detail})` : "") +
        (replayed ? " (the same refusal as moments ago: recorded on-chain once)" : ""),
    });
  }

  private async requestApproval(pc: PaymentContext, quote: Quote, maxAmount: bigint): Promise<PayPending> {
    const approvalId = newApprovalId();
    const txnId = newTxnId();
    const now = new Date();
    // Counted under the agent's lock (payments of one agent are serialised across instances): the cap holds.
    const open = await this.ctx.store.approvals.countDocuments({
      agentAddress: pc.agent.address,
      $or: [{ status: "pending", expiresAt: { $gt: now } }, { status: "approving" }],
    });
    if (open >= MAX_PENDING_APPROVALS) {
      const wait = `${open} payments of this agent already wait for its owner (at most ${MAX_PENDING_APPROVALS}); nothing was paid or recorded`;
      const full = appError("too_many_pending_approvals", `${wait}. Wait until the owner decides them or they expire.`);
      throw transient(full, PENDING_RETRY_S);
    }
    const expiresAt = new Date(now.getTime() + this.ctx.config.approvalTtlSeconds * 1000);
    // An approval is a payment to come: committed to its key first, so a stalled run never leaves a second one.
    const key = pc.fences?.key;
    if (key && !(await key.hold(txnId))) throw new LeaseLostError();
    const approval: ApprovalDoc = {
      approvalId,
      txnId,
      agentAddress: pc.agent.address,
      ownerAddress: pc.agent.ownerAddress,
      merchant: pc.merchant,
      serviceUrl: pc.serviceUrl,
      method: pc.seller.method,
      // As JSON text: any key the agent sends to its seller (a "$where", a dotted name) is storable that way.
      requestBody: pc.seller.body === undefined ? undefined : JSON.stringify(pc.seller.body),
      amount: quote.amount.toString(),
      payTo: quote.requirement.payTo,
      maxAmount: maxAmount.toString(),
      intent: pc.intent,
      status: "pending",
      requestedAt: now,
      resolvedAt: null,
      expiresAt,
    };
    await this.ctx.store.approvals.insertOne(approval).catch(async (err: unknown) => {
      await key?.letGo?.(txnId).catch(() => undefined);
      throw err;
    });
    await this.ledger.insert(
      ledgerEntry(
        txnId,
        this.ledgerBase(pc, approvalId),
        { amount: quote.amount.toString(), status: "pending", phase: "quoted", payTo: quote.requirement.payTo },
        now,
      ),
    );
    approval.ownerAddress = await followAgentOwner(this.ctx.store, approval);
    this.ctx.webhooks.later(() => alertApproval(this.ctx, "approval.requested", approval));
    const amount = fromBaseUnits(quote.amount);
    return {
      status: "pending",
      approvalId,
      amount,
      merchant: pc.merchant,
      intent: pc.intent,
      transactionId: txnId,
      expiresAt: expiresAt.toISOString(),
      message: `Payment of ${amount} USDC to ${pc.merchant} is above the approval threshold and waits for the owner's approval at ${this.ctx.urls.dashboard}/approvals. Do not retry; check the ledger for the outcome.`,
    };
  }
}
