/**
 * Moving value, for a payment the policy allows (pay.ts) or the owner approved (approve.ts): sign, write down and
 * commit (authorize.ts begin), authorise on-chain, swap the shortfall if any, verify the settlement, send the paid
 * request, judge the settlement on-chain, and release the budget when anything fails after authorisation. Every
 * step's effect is written to the ledger entry first (phases.ts), so recovery can finish what a crash interrupted.
 */
import { fromBaseUnits } from "../amounts";
import type { OwnerApprovalInput, TransferInput } from "../chain/policyOps";
import { AppError, appError, upstreamError } from "../errors";
import type { AllowlistProof } from "../policy/allowlist";
import type { PayApproved } from "../schemas/payments";
import type { AgentDoc, PaymentReceipt } from "../store/documents";
import type { Fence } from "../store/leases";
import { type PhaseTimer, phaseTimer } from "../util/timer";
import type { VerifyResponse } from "../x402/facilitator";
import type { Quote, SellerRequest, SignedPayment } from "../x402/buyer";
import { verifyKnown, verifyTransfer } from "../x402/verifyTransfer";
import { swapView } from "../services/presenters";
import { authorize, begin, blockedOnchain, markAuthorized } from "./authorize";
import { type Room, finish } from "./context";
import type { LedgerBase } from "./phases";
import { resolveInFlight } from "./recover";
import { awaitPendingSettlement } from "./pendingSettlement";
import { offerRecord, receiptRecord } from "./receipt";
import { release } from "./release";
import { type Approved, type Blocked, type PaymentResult, type Refused, refused } from "./result";
import { send } from "./send";
import { settled } from "./settle";
import { sign } from "./sign";
import { type SwapRecord, type Swapped, withSwapNote } from "./swap";

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
  /** Buys the USDC shortfall once the payment is authorised, before it is paid (docs/payments.md: "Swap before settlement"). */
  swap?: (p: { txnId: string; paymentId: string; transfer: TransferInput }) => Promise<Swapped | Blocked>;
  /** The owner's gas allowance check, started earlier (beside the quote); made here otherwise. */
  gasChecked?: Promise<void>;
  /** The wallet's USDC as the policy's simulation read it just before (pay.ts), when it did. */
  usdcHeld?: bigint;
}

/** Authorises on-chain, pays the seller and settles. Called with the agent's lock held. */
export async function execute(room: Room, input: ExecuteInput): Promise<PaymentResult> {
  const { ctx } = room;
  const { txnId, base, quote } = input;
  const timer = input.timer ?? phaseTimer();
  const { signed: presigned, agent: signer } = input;
  if (!presigned && !signer) throw new Error("execute needs the signed payment or the agent");
  // The operator pays the authorisation (and a release): past the owner's daily gas allowance, nothing is sent.
  try {
    await (input.gasChecked ?? ctx.gas.check(base.ownerAddress));
  } catch (err) {
    if (err instanceof AppError) return refused(err);
    throw err;
  }
  let signed: SignedPayment;
  try {
    // Signed here (an approval's payment) or already, beside the policy's simulation (POST /pay's own sign step).
    signed = await (presigned ?? ctx.telemetry.step("sign", () => sign(room, signer as AgentDoc, quote)));
  } catch (err) {
    // Nothing was authorised yet: a requirement the x402 client cannot sign is the seller's problem.
    return refused(
      appError(
        "unsupported_payment",
        `The seller's payment requirement could not be signed (${(err as Error).message}); nothing was paid.`,
      ),
    );
  }
  timer.mark("sign");
  ctx.telemetry.annotate(txnId, signed.nonce);
  await begin(room, {
    txnId,
    base,
    amount: quote.amount,
    signed,
    fences: input.fences ?? [],
    ...(quote.offer ? { extra: { offer: offerRecord(quote.offer) } } : {}),
  });
  timer.mark("ledger");

  // On a node that mines what it receives at once, the authorisation is in effect as soon as it is sent: the verify
  // then runs beside the receipt, and its answer is kept only if it passed (a settlement that simulates cleanly needs
  // the authorisation in effect). Elsewhere, or after a swap, it runs once the authorisation is mined, as it must.
  let early: Promise<VerifyResponse> | undefined;
  // Once the authorisation lands, the settlement's simulation tells nothing the chain has not told already when the
  // wallet's USDC read just before covers the amount and no swap comes between: the verify then makes no chain call
  // (verifyKnown). Otherwise it simulates the settlement.
  const answered = !input.swap && input.usdcHeld !== undefined && input.usdcHeld >= quote.amount;
  const verify = () =>
    (answered ? verifyKnown : verifyTransfer)(ctx.chain, quote, signed).catch((err: unknown): VerifyResponse => {
      ctx.logger.error({ err, txnId }, "payment verify failed");
      return { isValid: false, invalidReason: "verify_unavailable", invalidMessage: "the chain did not answer the verify call" };
    });
  const sentOff = await authorize(room, {
    txnId,
    base,
    signed,
    proof: input.proof,
    approval: input.approval,
    sent: () => {
      if (!input.swap && !answered && ctx.chain.receipts.immediate) early = verify();
    },
  });
  if (sentOff.kind === "failed") {
    // Resolved from the chain at once (or left to recovery).
    await resolveInFlight(room, txnId).catch(() => undefined);
    return refused(sentOff.error);
  }
  const { result } = sentOff;
  const charged = ctx.gas.charge(base.ownerAddress, result.receipt);
  if (!result.authorized) {
    await charged;
    return blockedOnchain(room, { txnId, base, amount: quote.amount, result });
  }
  timer.mark("authorize");
  // Beside the facilitator's verify: recovery treats "authorizing" with its authorizeTxHash the same way.
  const marked = markAuthorized(room, txnId, result);

  const paid: Paid = {
    room,
    txnId,
    base,
    quote,
    paymentId: signed.nonce,
    authorizeTxHash: result.txHash,
    dailyBudget: input.dailyBudget,
    spentToday: result.spentToday ?? 0n,
    timer,
    swapped: null,
  };
  if (input.swap) {
    let outcome: Swapped | Blocked;
    try {
      await marked;
      const swap = input.swap;
      outcome = await ctx.telemetry.step("swap", () => swap({ txnId, paymentId: signed.nonce, transfer: signed.transfer }));
    } catch (err) {
      ctx.logger.error({ err, txnId }, "swapForPayment failed");
      return failAfterAuthorize(
        paid,
        `swap: ${(err as Error).message ?? String(err)}`.slice(0, 300),
        upstreamError("The swap that was to buy the missing USDC did not go through; the budget was released and nothing was paid."),
      );
    }
    if (outcome.kind === "blocked") return outcome;
    paid.swapped = outcome.swapped;
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
      paid,
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
    return await sendAndSettle(paid, input.seller, signed, result.blockNumber);
  } catch (err) {
    if (err instanceof AppError) throw err;
    ctx.logger.error({ err, txnId }, "unexpected failure after the payment left; deciding from the chain");
    return failAfterAuthorize(
      paid,
      `unexpected: ${(err as Error).message ?? String(err)}`.slice(0, 300),
      upstreamError(
        "The payment could not be completed. Its outcome was read from the chain: it did not settle, the budget was released and nothing was paid.",
      ),
    );
  }
}

/** The signed transfer as its entry records it (payTo, amount, validBefore). */
function transferFields(signed: SignedPayment) {
  const t = signed.transfer;
  return { payTo: t.payTo, amount: t.amount.toString(), validBefore: Number(t.validBefore) };
}

/** An authorised payment, as the steps after authorisation see it. */
interface Paid {
  room: Room;
  txnId: string;
  base: LedgerBase;
  quote: Quote;
  paymentId: string;
  authorizeTxHash: string;
  dailyBudget: bigint;
  spentToday: bigint;
  timer: PhaseTimer;
  swapped: SwapRecord | null;
}

async function sendAndSettle(p: Paid, seller: SellerRequest, signed: SignedPayment, authorizeBlock: number): Promise<PaymentResult> {
  const sent = await send(p.room, seller, signed);
  if (sent.kind === "refused") return failAfterAuthorize(p, sent.detail, sent.error);
  const { res } = sent;
  p.timer.mark("seller");
  let s = await p.room.ctx.telemetry.step("settle", () => settled(p.room, p.base.agentAddress, p.paymentId, authorizeBlock, res));
  const answer = { status: res.status, body: res.body };
  if (s.kind === "pending") {
    const payment = { txnId: p.txnId, agentAddress: p.base.agentAddress, paymentId: p.paymentId, ...transferFields(signed) };
    const hash = s.txHash;
    const decided = await p.room.ctx.telemetry.step("settle", () => awaitPendingSettlement(p.room, payment, hash));
    s = decided.kind === "settled" ? { kind: "settled", txHash: decided.txHash } : { kind: "unsettled", reason: decided.reason };
  }
  if (s.kind === "unsettled") {
    return failAfterAuthorize(
      p,
      `seller: ${s.reason}`.slice(0, 300),
      upstreamError(`The seller did not settle the payment (${s.reason.slice(0, 200)}). The budget was released; nothing was paid.`, {
        reason: s.reason.slice(0, 200),
        sellerStatus: res.status,
      }),
      answer,
    );
  }
  p.timer.mark("confirm");
  const receipt = p.quote.offer ? await receiptRecord(p.room, p.quote.offer, res, p.base.agentAddress, s.txHash) : undefined;
  return approved(p, s.txHash, answer, res.status >= 400 ? `The seller answered HTTP ${res.status} after settling.` : null, receipt);
}

/** The payment settled: its entry is done, approved. */
async function approved(
  p: Paid,
  settledTx: string | null,
  res: { status: number; body: unknown } | null,
  detail: string | null,
  receipt?: PaymentReceipt,
): Promise<Approved> {
  const { room, txnId, base, quote } = p;
  const settledAt = new Date();
  await finish(room, txnId, ["authorizing", "authorized"], {
    status: "approved",
    txHash: settledTx,
    settledAt,
    detail,
    ...(receipt ? { receipt } : {}),
  });
  room.ctx.logger.info(
    { txnId, agent: base.agentAddress, merchant: base.merchant, amount: quote.amount.toString(), ms: p.timer.done() },
    "payment approved",
  );
  const outcome: PayApproved = {
    status: "approved",
    txHash: settledTx,
    amount: fromBaseUnits(quote.amount),
    currency: "USDC",
    merchant: base.merchant,
    remainingDailyBudget: fromBaseUnits(p.dailyBudget > p.spentToday ? p.dailyBudget - p.spentToday : 0n),
    settledAt: settledAt.toISOString(),
    intent: base.intent,
    transactionId: txnId,
    paymentId: p.paymentId,
    authorizeTxHash: p.authorizeTxHash,
    ...(p.swapped ? { swap: swapView(p.swapped) } : {}),
    ...(detail ? { message: detail } : {}),
    response: res ?? { status: 0, body: null },
  };
  return { kind: "approved", outcome };
}

/** After a failure past authorisation: release (which kills the authorisation), unless it settled after all (approved). */
async function failAfterAuthorize(
  p: Paid,
  detail: string,
  error: AppError,
  res: { status: number; body: unknown } | null = null,
): Promise<Approved | Refused> {
  const outcome = await p.room.ctx.telemetry.step("release", () => release(p.room, p.txnId, detail));
  if (outcome.state === "settled") return approved(p, outcome.txHash, res, `${error.message} The payment settled on-chain all the same.`);
  return refused(p.swapped ? withSwapNote(error, p.swapped) : error);
}
