/**
 * Moving value: authorise on-chain, verify with the facilitator, send the paid request, confirm settlement, and
 * give the budget back when anything fails after authorisation. Every step is written to the ledger first, so a
 * restart can finish what a crash interrupted (resolveInFlight).
 */
import { fromBaseUnits } from "../amounts";
import type { PayApproved, PayOutcome } from "../schemas/payments";
import { type OwnerApprovalInput, type TransferInput, NO_APPROVAL } from "../chain/policyOps";
import { PaymentState } from "../chain/reasons";
import { AppError, conflict, gatewayTimeout, transient, upstreamError } from "../errors";

export { outcomeOf, transferOf } from "./outcomes";
import { blockedOutcome } from "./outcomes";
import type { AllowlistProof } from "../policy/allowlist";
import type { AgentDoc, PaymentDoc } from "../store/documents";
import type { Fence } from "../store/leases";
import type { LedgerBase } from "../store/ledger";
import { type Quote, type SellerRequest, type SignedPayment, SellerError, readSettlement, requestSeller } from "../x402/buyer";
import { SettlementSteps } from "./settlementSteps";
import { type PhaseTimer, phaseTimer } from "../util/timer";
import { verifyTransfer } from "../x402/verifyTransfer";
import type { VerifyResponse } from "../x402/facilitator";
import { swapView } from "./presenters";
import { type SwapRecord, type SwapResult, withSwapNote } from "./swap";

const IN_FLIGHT: PaymentDoc["phase"][] = ["authorizing", "authorized", "settling"];
/** Retry-After of a payment refused because another of its agent's is still in flight elsewhere. */
const IN_FLIGHT_RETRY_S = 5;

export type { PayOutcome };

export interface ExecuteInput {
  txnId: string;
  /** With `createdAt` when the entry exists already (an approval's). */
  base: LedgerBase & { createdAt?: Date };
  seller: SellerRequest;
  quote: Quote;
  proof: AllowlistProof;
  dailyBudget: bigint;
  approval?: OwnerApprovalInput;
  timer?: PhaseTimer;
  /** The payment already signed (while the policy was simulated); signed here for `agent` otherwise. */
  signed?: Promise<SignedPayment>;
  agent?: AgentDoc;
  /** The leases the payment runs under (agent lock, Idempotency-Key): committed to before anything is sent. */
  fences?: Fence[];
  /** Buys the USDC shortfall once the payment is authorised, before it is paid (README: "Swap before settlement"). */
  swap?: (p: { txnId: string; paymentId: string; transfer: TransferInput }) => Promise<SwapResult>;
  /** The owner's gas allowance check, started earlier (beside the quote); made here otherwise. */
  gasChecked?: Promise<void>;
}

/** Maps a seller problem to the error the caller sees (always in the interface's error shape). */
export function sellerAppError(err: SellerError): AppError {
  if (err.code === "seller_timeout") return gatewayTimeout(err.message);
  if (err.code === "unsafe_seller_address" || err.code === "insecure_seller") return new AppError(422, err.code, err.message);
  return new AppError(502, err.code === "seller_unreachable" ? "upstream_error" : err.code, err.message);
}

export class SettlementService extends SettlementSteps {
  /** Called with each payment recovery finished (its Idempotency-Key then answers with the outcome). */
  afterRecovery: (payment: PaymentDoc) => Promise<void> = () => Promise.resolve();

  /** Authorises on-chain, pays the seller and settles. Called with the agent's lock held. */
  async execute(input: ExecuteInput): Promise<PayOutcome> {
    const { txnId, base, quote, proof } = input;
    const timer = input.timer ?? phaseTimer();
    const agent = base.agentAddress;
    const { signed: presigned, agent: signer } = input;
    const sign = presigned ? () => presigned : signer ? () => this.sign(signer, quote) : null;
    if (!sign) throw new Error("execute needs the signed payment or the agent");
    // The operator pays the authorisation (and a release): past the owner's daily gas allowance, nothing is sent.
    await (input.gasChecked ?? this.ctx.gas.check(base.ownerAddress));
    const signed = await sign().catch((err: unknown) => {
      // Nothing was authorised yet: a requirement the x402 client cannot sign is the seller's problem.
      throw new AppError(
        422,
        "unsupported_payment",
        `The seller's payment requirement could not be signed (${(err as Error).message}); nothing was paid.`,
      );
    });
    const paymentId = signed.nonce;
    timer.mark("sign");
    const transfer = signed.transfer;
    const now = new Date();
    const { createdAt: _created, ...baseFields } = base;
    const written = await this.ledger.upsert(
      txnId,
      {
        ...baseFields,
        amount: quote.amount.toString(),
        status: "processing",
        phase: "authorizing",
        reason: null,
        paymentId,
        txHash: null,
        authorizeTxHash: null,
        releaseTxHash: null,
        payTo: transfer.payTo,
        validAfter: Number(transfer.validAfter),
        validBefore: Number(transfer.validBefore),
        leaseUntil: this.lease(),
        instanceId: this.ctx.instanceId,
        updatedAt: now,
        settledAt: null,
        onchain: { confirmed: false, blockNumber: null },
      },
      base.createdAt ?? now,
    );
    // Undone when a lease was lost: a new entry goes, an approved one goes back to waiting for its approval.
    await this.commit(txnId, input.fences ?? [], () => this.ledger.undoUncommitted(txnId, written.upsertedCount === 1));
    timer.mark("ledger");

    // On a node that mines what it receives at once, the authorisation is in effect as soon as it is sent: the verify
    // then runs beside the receipt, and its answer is kept only if it passed (a settlement that simulates cleanly needs
    // the authorisation in effect). Elsewhere, or after a swap, it runs once the authorisation is mined, as it must.
    let early: Promise<VerifyResponse> | undefined;
    const verify = () =>
      verifyTransfer(this.ctx.chain, quote, signed).catch((err: unknown): VerifyResponse => {
        this.ctx.logger.error({ err, txnId }, "payment verify failed");
        return { isValid: false, invalidReason: "verify_unavailable", invalidMessage: "the chain did not answer the verify call" };
      });
    let result;
    try {
      result = await this.ops.authorize(
        base.policyAddress,
        paymentId,
        base.merchant,
        proof,
        transfer,
        input.approval ?? NO_APPROVAL,
        (hash) => {
          if (!input.swap && this.ctx.chain.receipts.immediate) early = verify();
          return this.update(txnId, { authorizeTxHash: hash });
        },
      );
    } catch (err) {
      this.ctx.logger.error({ err, txnId }, "authorizePayment failed");
      // A reverted authorisation (the owner set another operator, say) is the owner's gas too.
      await this.ctx.gas.charge(base.ownerAddress, await this.ctx.chain.receiptOfFailure(err));
      await this.resolveInFlight(txnId).catch(() => undefined);
      throw upstreamError("The payment could not be authorised on-chain; nothing was paid. Try again.");
    }
    const charged = this.ctx.gas.charge(base.ownerAddress, result.receipt);
    if (!result.authorized) {
      await charged;
      await this.update(txnId, {
        status: "blocked",
        phase: "done",
        reason: result.reason,
        txHash: result.txHash,
        onchain: { confirmed: false, blockNumber: result.blockNumber },
      });
      return blockedOutcome({
        reason: result.reason ?? "blocked",
        txHash: result.txHash,
        amount: quote.amount,
        merchant: base.merchant,
        intent: base.intent,
        transactionId: txnId,
      });
    }
    timer.mark("authorize");
    // Beside the facilitator's verify: recovery treats "authorizing" with its authorizeTxHash the same way.
    const marked = this.update(txnId, { phase: "authorized", authorizeTxHash: result.txHash, authorizeBlock: result.blockNumber });

    let swapped: SwapRecord | null = null;
    // After a failure past authorisation: release (which kills the authorisation), unless it settled after all, which
    // is then a success.
    const approved = async (
      settledTx: string | null,
      res: { status: number; body: unknown } | null,
      detail: string | null,
    ): Promise<PayApproved> => {
      const settledAt = new Date();
      await this.update(txnId, { status: "approved", phase: "done", txHash: settledTx, settledAt, detail });
      this.ctx.logger.info(
        { txnId, agent, merchant: base.merchant, amount: quote.amount.toString(), ms: timer.done() },
        "payment approved",
      );
      const spent = result.spentToday ?? 0n;
      return {
        status: "approved",
        txHash: settledTx,
        amount: fromBaseUnits(quote.amount),
        currency: "USDC",
        merchant: base.merchant,
        remainingDailyBudget: fromBaseUnits(input.dailyBudget > spent ? input.dailyBudget - spent : 0n),
        settledAt: settledAt.toISOString(),
        intent: base.intent,
        transactionId: txnId,
        paymentId,
        authorizeTxHash: result.txHash,
        ...(swapped ? { swap: swapView(swapped) } : {}),
        ...(detail ? { message: detail } : {}),
        response: res ?? { status: 0, body: null },
      };
    };
    const failAfterAuthorize = async (
      detail: string,
      error: AppError,
      res: { status: number; body: unknown } | null = null,
    ): Promise<PayOutcome> => {
      const settled = await this.finishUnsettled(txnId, detail);
      if (settled.state === "settled") return approved(settled.txHash, res, `${error.message} The payment settled on-chain all the same.`);
      throw swapped ? withSwapNote(error, swapped) : error;
    };

    if (input.swap) {
      let outcome: SwapResult;
      try {
        outcome = await input.swap({ txnId, paymentId, transfer });
      } catch (err) {
        this.ctx.logger.error({ err, txnId }, "swapForPayment failed");
        return failAfterAuthorize(
          `swap: ${(err as Error).message ?? String(err)}`.slice(0, 300),
          upstreamError("The swap that was to buy the missing USDC did not go through; the budget was released and nothing was paid."),
        );
      }
      if ("blocked" in outcome) return outcome.blocked;
      swapped = outcome.swapped;
      timer.mark("swap");
    }

    // The signed authorisation leaves this process (for the seller) only once the policy has authorised it on-chain,
    // and once the settlement it allows simulates cleanly (the facilitator's verify, in one call: verifyTransfer.ts).
    const verifying = (early ?? Promise.resolve(null)).then((answer) => (answer?.isValid ? answer : verify()));
    const [verified] = await Promise.all([verifying, marked, charged]);
    timer.mark("verify");
    if (!verified.isValid) {
      const reason = verified.invalidReason ?? "invalid_payment";
      return failAfterAuthorize(
        `verify: ${reason}`,
        upstreamError(`The signed payment did not verify (${reason}), so it was not sent. The budget was released; nothing was paid.`, {
          reason,
        }),
      );
    }

    // From here the signed payment has left: every outcome is "maybe paid", and an unexpected error is no exception
    // to that (a redirect to an unparsable URL, a body or header nothing can read, a store that fails): the chain
    // decides (settled: approved; not: released and failed), never a 500 that reads "nothing was charged".
    try {
      return await this.afterHeaderLeft(input, signed, result, { approved, failAfterAuthorize });
    } catch (err) {
      if (err instanceof AppError) throw err;
      this.ctx.logger.error({ err, txnId }, "unexpected failure after the payment left; deciding from the chain");
      return failAfterAuthorize(
        `unexpected: ${(err as Error).message ?? String(err)}`.slice(0, 300),
        upstreamError(
          "The payment could not be completed. Its outcome was read from the chain: it did not settle, the budget was released and nothing was paid.",
        ),
      );
    }
  }

  private async afterHeaderLeft(
    input: ExecuteInput,
    signed: SignedPayment,
    result: { blockNumber: number },
    finish: {
      approved: (settledTx: string | null, res: { status: number; body: unknown } | null, detail: string | null) => Promise<PayOutcome>;
      failAfterAuthorize: (detail: string, error: AppError, res?: { status: number; body: unknown } | null) => Promise<PayOutcome>;
    },
  ): Promise<PayOutcome> {
    const agent = input.base.agentAddress;
    const paymentId = signed.nonce;
    let res;
    try {
      res = await requestSeller(input.seller, this.sellerOptions(), signed.headers);
    } catch (err) {
      const error = err instanceof SellerError ? sellerAppError(err) : upstreamError("The seller's answer could not be read.");
      return finish.failAfterAuthorize(`seller: ${err instanceof SellerError ? err.code : (err as Error).message}`, error);
    }
    input.timer?.mark("seller");
    const settlement = readSettlement(res);
    let settledTx = settlement?.success && settlement.transaction ? settlement.transaction : null;
    // The seller's word is checked on-chain: its transaction must carry our AuthorizationUsed; without one, the
    // authorisation state decides (only a settlement can use the nonce: the wallet signs nothing else).
    const inSellerTx = settledTx !== null && (await this.ops.settledIn(settledTx, agent, paymentId).catch(() => false));
    const used = inSellerTx || (await this.ops.authorizationUsed(agent, paymentId));
    if (!used) {
      const sellerReason =
        (settlement && !settlement.success && settlement.errorReason) ||
        (res.body && typeof res.body === "object" && "error" in res.body ? String(res.body.error) : null) ||
        `HTTP ${res.status}`;
      return finish.failAfterAuthorize(
        `seller: ${sellerReason}`.slice(0, 300),
        upstreamError(`The seller did not settle the payment (${sellerReason.slice(0, 200)}). The budget was released; nothing was paid.`, {
          reason: sellerReason.slice(0, 200),
          sellerStatus: res.status,
        }),
        { status: res.status, body: res.body },
      );
    }
    if (!inSellerTx) settledTx = await this.ops.settlementTx(agent, paymentId, result.blockNumber);
    input.timer?.mark("confirm");
    return finish.approved(
      settledTx,
      { status: res.status, body: res.body },
      res.status >= 400 ? `The seller answered HTTP ${res.status} after settling.` : null,
    );
  }

  /**
   * Resolves a payment left between authorise and settle from chain state: settled -> approved; authorised but not
   * settled -> released (the authorisation dies with it) -> failed; never authorised -> voided (no authorisation of
   * it can land any more) -> failed. An authorisation still pending is left for a later sweep. `stale`: the payment
   * is another run's, which may only have stalled (see SettlementSteps.commit).
   */
  async resolveInFlight(txnId: string, stale = false): Promise<void> {
    const doc = await this.ctx.store.payments.findOne({ txnId });
    if (!doc || doc.phase === "done" || doc.phase === "quoted" || !doc.paymentId) return;
    let mined = doc.authorizeBlock != null;
    if (doc.authorizeTxHash) {
      const receipt = await this.ctx.chain.receiptOf(doc.authorizeTxHash, 30_000).catch(() => null);
      if (!receipt && (await this.ctx.chain.provider.getTransaction(doc.authorizeTxHash).catch(() => null))) return; // still pending
      if (receipt && doc.authorizeBlock == null) await this.update(txnId, { authorizeBlock: receipt.blockNumber });
      mined ||= receipt !== null;
    }
    // Never seen mined: perhaps never sent, perhaps still to come from a stalled run (or a dead one's last send).
    if (!mined) {
      const voided = await this.voidUnsent({ ...doc, paymentId: doc.paymentId });
      if (voided === "voided") return;
      if (voided === "unavailable" && stale && !doc.authorizeTxHash && !(await this.pastValidity(doc))) return; // its run may still authorise it
    }
    const wasAuthorized =
      doc.authorizeBlock != null || (await this.ops.paymentState(doc.policyAddress, doc.paymentId)) === PaymentState.Authorized;
    const outcome = await this.finishUnsettled(txnId, "recovered after an interruption");
    if (outcome.state === "released" && !wasAuthorized && doc.status !== "blocked") {
      await this.update(txnId, { reason: "not_authorized" });
    }
  }

  /** An approval whose payment was finished by recovery takes the payment's outcome. */
  private async settleApproval(txnId: string, approvalId: string): Promise<void> {
    const payment = await this.ctx.store.payments.findOne({ txnId });
    if (!payment || payment.phase !== "done") return;
    const status = payment.status === "approved" ? "approved" : "failed";
    await this.ctx.store.approvals.updateOne({ approvalId, status: "approving" }, { $set: { status, resolvedAt: new Date() } });
  }

  /**
   * Finishes payments whose lease ran out (the instance working on them stopped): at start-up and then
   * periodically. A payment another live instance is working on keeps its lease and is left alone. At start-up
   * (`own`), the payments of this instance id are taken at once: the process that held their lease is gone.
   */
  async recover(now = new Date(), opts: { own?: boolean } = {}): Promise<number> {
    const free = [
      { leaseUntil: { $lt: now } },
      { leaseUntil: { $exists: false } },
      ...(opts.own ? [{ instanceId: this.ctx.instanceId }] : []),
      // An instance whose heartbeat went stale: taken over at once, fenced on-chain first (src/services/failover.ts).
      ...(this.ctx.leases.deadHolders().length ? [{ instanceId: { $in: [...this.ctx.leases.deadHolders()] } }] : []),
    ];
    const due = await this.ctx.store.payments.find({ phase: { $in: IN_FLIGHT }, $or: free }).toArray();
    let resolved = 0;
    // All at once: the agent lock serialises one agent's, and a dead instance's payments are final in one round.
    await Promise.all(
      due.map((doc) =>
        this.ctx.agentLock
          .run(doc.agentAddress, () => this.finishClaimed(doc, !(opts.own && doc.instanceId === this.ctx.instanceId)))
          .then((claimed) => (resolved += claimed ? 1 : 0))
          .catch((err: unknown) => this.ctx.logger.error({ err, txnId: doc.txnId }, "could not resolve an interrupted payment")),
      ),
    );
    return resolved;
  }

  /** Claims `doc`, whose lease ran out, and finishes it; the caller holds its agent's lock. */
  private async finishClaimed(doc: PaymentDoc, stale: boolean): Promise<boolean> {
    // Claim it: of several recovering instances exactly one proceeds.
    if (!(await this.ledger.claim(doc, { leaseUntil: this.lease(), instanceId: this.ctx.instanceId }))) return false;
    await this.resolveInFlight(doc.txnId, stale);
    if (doc.approvalId) await this.settleApproval(doc.txnId, doc.approvalId);
    const done = await this.ctx.store.payments.findOne({ txnId: doc.txnId, phase: "done" });
    if (done) await this.afterRecovery(done);
    return true;
  }

  /**
   * After taking an agent's lock over from an instance that stopped renewing it: that instance may only be stalled,
   * so its payments still in flight are waited for before another begins (see SettlementSteps.commit). Those whose
   * lease has run out are finished here, since recovery would wait for the lock this run holds.
   */
  async awaitQuiet(agentAddress: string, waitMs = 120_000): Promise<void> {
    // Measured on the lease clock, like the lock it follows (tests move it to play the wait).
    const clock = this.ctx.leases.clock;
    const deadline = clock() + waitMs;
    for (let delay = 50; ; delay = Math.min(delay * 2, 1_000)) {
      const busy = await this.ctx.store.payments.find({ agentAddress, phase: { $in: IN_FLIGHT } }).toArray();
      if (!busy.length) return;
      if (delay === 50)
        this.ctx.logger.warn({ agentAddress, txnId: busy[0].txnId }, "took an agent's lock over: waiting for its payments in flight");
      const now = Date.now();
      for (const doc of busy.filter((d) => !d.leaseUntil || d.leaseUntil.getTime() < now || this.ctx.leases.isDead(d.instanceId))) {
        await this.finishClaimed(doc, true).catch((err: unknown) =>
          this.ctx.logger.error({ err, txnId: doc.txnId }, "could not resolve a payment"),
        );
      }
      if (clock() > deadline) {
        // Transient: the key (if any) is freed, and a retry once that payment is final gets its own outcome.
        throw transient(
          conflict(`A payment of this agent (${busy[0].txnId}) is still in flight on another instance; nothing was paid. Retry later.`),
          IN_FLIGHT_RETRY_S,
        );
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
