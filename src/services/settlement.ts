/**
 * Moving value: authorise on-chain, verify with the facilitator, send the paid request, confirm settlement, and
 * give the budget back when anything fails after authorisation. Every step is written to the ledger first, so a
 * restart can finish what a crash interrupted (resolveInFlight).
 */
import { fromBaseUnits } from "../amounts";
import { type OwnerApprovalInput, NO_APPROVAL, PolicyOps } from "../chain/policyOps";
import { AppError, gatewayTimeout, upstreamError } from "../errors";
import type { AllowlistProof } from "../policy/allowlist";
import type { PaymentDoc } from "../store/documents";
import { type Quote, type SellerRequest, type SignedPayment, SellerError, readSettlement, requestSeller, signPayment } from "../x402/buyer";
import type { ServiceContext } from "./context";
import { type PhaseTimer, phaseTimer } from "../util/timer";

export interface PayOutcome {
  httpStatus: 200 | 202 | 422;
  body: Record<string, unknown>;
}

/** What a ledger entry knows before any value moves. */
export type LedgerBase = Pick<
  PaymentDoc,
  "agentAddress" | "ownerAddress" | "policyAddress" | "merchant" | "serviceUrl" | "currency" | "intent" | "approvalId"
> & { createdAt?: Date };

export interface ExecuteInput {
  txnId: string;
  base: LedgerBase;
  seller: SellerRequest;
  quote: Quote;
  proof: AllowlistProof;
  dailyBudget: bigint;
  approval?: OwnerApprovalInput;
  timer?: PhaseTimer;
  /** The payment already signed (while the policy was simulated); signed here otherwise. */
  signed?: Promise<SignedPayment>;
}

/** Maps a seller problem to the error the caller sees (always in the interface's error shape). */
export function sellerAppError(err: SellerError): AppError {
  if (err.code === "seller_timeout") return gatewayTimeout(err.message);
  if (err.code === "unsafe_seller_address") return new AppError(422, err.code, err.message);
  return new AppError(502, err.code === "seller_unreachable" ? "upstream_error" : err.code, err.message);
}

export class SettlementService {
  readonly ops: PolicyOps;

  constructor(private readonly ctx: ServiceContext) {
    this.ops = new PolicyOps(ctx.chain);
  }

  private sellerOptions() {
    const c = this.ctx.config;
    return { timeoutMs: c.sellerTimeoutMs, maxBytes: c.sellerMaxBytes, allowPrivate: c.allowPrivateSellers, chainId: c.chainId, usdcAddress: c.usdcAddress };
  }

  private async update(txnId: string, set: Partial<PaymentDoc>): Promise<void> {
    await this.ctx.store.payments.updateOne({ txnId }, { $set: { ...set, updatedAt: new Date() } });
  }

  /** The agent's EIP-3009 authorisation for the quote. It stays in memory until the policy has authorised it. */
  sign(agent: string, quote: Quote): Promise<SignedPayment> {
    return this.ctx.wallets.signer(agent).then((signer) => signPayment(signer, quote));
  }

  /** Authorises on-chain, pays the seller and settles. Called with the agent's lock held. */
  async execute(input: ExecuteInput): Promise<PayOutcome> {
    const { txnId, base, quote, proof } = input;
    const timer = input.timer ?? phaseTimer();
    const agent = base.agentAddress;
    const signed = await (input.signed ?? this.sign(agent, quote));
    const paymentId = signed.nonce;
    timer.mark("sign");
    const auth = signed.payload.payload as { authorization?: { validBefore?: string } };
    const now = new Date();
    await this.ctx.store.payments.updateOne(
      { txnId },
      {
        $set: {
          ...withoutCreatedAt(base),
          amount: quote.amount.toString(),
          status: "processing",
          phase: "authorizing",
          reason: null,
          paymentId,
          txHash: null,
          authorizeTxHash: null,
          releaseTxHash: null,
          payTo: quote.requirement.payTo,
          validBefore: Number(auth.authorization?.validBefore ?? 0),
          updatedAt: now,
          settledAt: null,
          onchain: { confirmed: false, blockNumber: null },
        },
        $setOnInsert: { txnId, createdAt: base.createdAt ?? now },
      },
      { upsert: true },
    );
    timer.mark("ledger");

    // The facilitator's check runs while the authorisation is mined; nothing is sent to the seller before both pass.
    const verifying = this.ctx.facilitator.verify(signed.payload, quote.requirement).catch((err) => {
      this.ctx.logger.error({ err, txnId }, "facilitator verify failed");
      return { isValid: false, invalidReason: "facilitator_unreachable", invalidMessage: "the facilitator did not answer" };
    });
    let result;
    try {
      result = await this.ops.authorize(
        base.policyAddress,
        paymentId,
        base.merchant,
        proof.leaf,
        proof.proof,
        quote.amount,
        input.approval ?? NO_APPROVAL,
        (hash) => this.update(txnId, { authorizeTxHash: hash }),
      );
    } catch (err) {
      this.ctx.logger.error({ err, txnId }, "authorizePayment failed");
      await this.resolveInFlight(txnId).catch(() => undefined);
      throw upstreamError("The payment could not be authorised on-chain; nothing was paid. Try again.");
    }
    if (!result.authorized) {
      await this.update(txnId, { status: "blocked", phase: "done", reason: result.reason, txHash: result.txHash, onchain: { confirmed: false, blockNumber: result.blockNumber } });
      return {
        httpStatus: 422,
        body: {
          status: "blocked",
          reason: result.reason,
          onchainEvent: "PaymentBlocked",
          txHash: result.txHash,
          amount: fromBaseUnits(quote.amount),
          merchant: base.merchant,
          intent: base.intent,
          transactionId: txnId,
        },
      };
    }
    timer.mark("authorize");
    await this.update(txnId, { phase: "authorized", authorizeTxHash: result.txHash, authorizeBlock: result.blockNumber });

    const failAfterAuthorize = async (detail: string, error: AppError): Promise<never> => {
      const settled = await this.finishUnsettled(txnId, detail);
      if (settled) throw new AppError(502, "upstream_error", `${error.message} The payment did settle on-chain (${settled}); it is recorded as approved.`);
      throw error;
    };

    const verify = await verifying;
    timer.mark("verify");
    if (!verify.isValid) {
      const reason = verify.invalidReason ?? "invalid_payment";
      return failAfterAuthorize(`facilitator: ${reason}`, upstreamError(`The facilitator refused the payment: ${reason}. The budget was released; nothing was paid.`, { reason }));
    }

    let res;
    try {
      res = await requestSeller(input.seller, this.sellerOptions(), signed.headers);
    } catch (err) {
      if (!(err instanceof SellerError)) throw err;
      return failAfterAuthorize(`seller: ${err.code}`, sellerAppError(err));
    }
    timer.mark("seller");
    const settlement = readSettlement(res);
    let settledTx = settlement?.success && settlement.transaction ? settlement.transaction : null;
    // The seller's word is checked on-chain: its transaction must carry our AuthorizationUsed; without one, the
    // authorisation state decides (nothing has cancelled it yet, so "used" here means settled).
    const inSellerTx = settledTx !== null && (await this.ops.settledIn(settledTx, agent, paymentId).catch(() => false));
    const used = inSellerTx || (await this.ops.authorizationUsed(agent, paymentId));
    if (!used) {
      const sellerReason =
        (settlement && !settlement.success && settlement.errorReason) ||
        (res.body && typeof res.body === "object" && "error" in res.body ? String((res.body as { error: unknown }).error) : null) ||
        `HTTP ${res.status}`;
      return failAfterAuthorize(
        `seller: ${sellerReason}`,
        upstreamError(`The seller did not settle the payment (${sellerReason}). The budget was released; nothing was paid.`, {
          reason: sellerReason,
          sellerStatus: res.status,
        }),
      );
    }
    if (!inSellerTx) settledTx = await this.ops.settlementTx(agent, paymentId, result.blockNumber);
    timer.mark("confirm");
    const settledAt = new Date();
    await this.update(txnId, { status: "approved", phase: "done", txHash: settledTx, settledAt, detail: res.status >= 400 ? `seller answered HTTP ${res.status} after settling` : null });
    this.ctx.logger.info({ txnId, agent, merchant: base.merchant, amount: quote.amount.toString(), ms: timer.done() }, "payment approved");
    const spent = result.spentToday ?? 0n;
    return {
      httpStatus: 200,
      body: {
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
        response: { status: res.status, body: res.body },
      },
    };
  }

  /**
   * After authorisation, when the payment did not (visibly) settle: cancel the EIP-3009 authorisation so it can
   * never settle later, then release the budget. Returns the settlement tx if it had settled after all.
   */
  private async finishUnsettled(txnId: string, detail: string): Promise<string | null> {
    const doc = await this.ctx.store.payments.findOne({ txnId });
    if (!doc?.paymentId) return null;
    const from = doc.authorizeBlock ?? 0;
    let status = await this.ops.authorizationStatus(doc.agentAddress, doc.paymentId, from);
    if (status.state === "open") {
      const signer = await this.ctx.wallets.signer(doc.agentAddress);
      await this.ops.cancelAuthorization(signer, doc.paymentId).catch((err) => {
        this.ctx.logger.warn({ err, txnId }, "cancelAuthorization failed; reading the outcome from chain");
      });
      status = await this.ops.authorizationStatus(doc.agentAddress, doc.paymentId, from);
      if (status.state === "open") throw new Error(`could not cancel the authorisation of ${txnId}`);
    }
    if (status.state === "settled") {
      await this.update(txnId, { status: "approved", phase: "done", txHash: status.txHash, settledAt: new Date(), detail });
      return status.txHash;
    }
    const releaseTx =
      (await this.ops.paymentState(doc.policyAddress, doc.paymentId)) === 1 ? await this.ops.release(doc.policyAddress, doc.paymentId) : null;
    await this.update(txnId, { status: "failed", phase: "done", reason: "settlement_failed", detail, releaseTxHash: releaseTx });
    return null;
  }

  /**
   * Resolves a payment left between authorise and settle from chain state: settled on-chain -> approved;
   * authorised but unsettled -> authorisation cancelled, budget released -> failed; never authorised -> failed.
   */
  async resolveInFlight(txnId: string): Promise<void> {
    const doc = await this.ctx.store.payments.findOne({ txnId });
    if (!doc || doc.phase === "done" || doc.phase === "quoted" || !doc.paymentId) return;
    if (doc.authorizeTxHash) {
      const receipt = await this.ctx.chain.provider.waitForTransaction(doc.authorizeTxHash, 1, 30_000).catch(() => null);
      if (receipt && doc.authorizeBlock == null) await this.update(txnId, { authorizeBlock: receipt.blockNumber });
    }
    const state = await this.ops.paymentState(doc.policyAddress, doc.paymentId);
    if (state === 1) {
      await this.finishUnsettled(txnId, "recovered after an interruption");
    } else {
      await this.update(txnId, {
        status: "failed",
        phase: "done",
        reason: state === 2 ? "settlement_failed" : "not_authorized",
        detail: "recovered after an interruption",
      });
    }
  }

  /** On start-up: every payment left in flight is resolved; nothing stays in between. */
  async recover(): Promise<number> {
    const stuck = await this.ctx.store.payments.find({ phase: { $in: ["authorizing", "authorized", "settling"] } }).toArray();
    for (const doc of stuck) {
      await this.ctx.agentLock.run(doc.agentAddress, () => this.resolveInFlight(doc.txnId)).catch((err) => {
        this.ctx.logger.error({ err, txnId: doc.txnId }, "could not resolve an interrupted payment");
      });
    }
    return stuck.length;
  }
}

function withoutCreatedAt(base: LedgerBase): Omit<LedgerBase, "createdAt"> {
  const { createdAt: _ignored, ...rest } = base;
  return rest;
}
