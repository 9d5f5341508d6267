/**
 * The authorize step: the payment is written down ("authorizing"), committed to the leases it runs under, and then
 * authorised on-chain by the policy contract (authorizePayment), which either authorises exactly this transfer or
 * records PaymentBlocked with its reason.
 */
import { type OwnerApprovalInput, NO_APPROVAL, type AuthorizeResult } from "../chain/policyOps";
import { type AppError, LeaseLostError, upstreamError } from "../errors";
import type { AllowlistProof } from "../policy/allowlist";
import type { Fence } from "../store/leases";
import type { SignedPayment } from "../x402/buyer";
import { type Room, finish, inFlight, lease, note } from "./context";
import { blockedOutcome } from "./outcomes";
import type { Blocked } from "./result";
import type { LedgerBase, LedgerUpdate } from "./phases";

/**
 * Writes payment `txnId` down as "authorizing" (a new entry, or an approval's "quoted" one when `createdAt` is given)
 * and commits it to `fences` before any transaction is sent; when a lease was lost, undoes the entry and stops
 * (LeaseLostError: nothing paid).
 *
 * Why this closes the stall window rather than narrowing it: the entry is written first and the fences are checked
 * after, while an instance that takes a lease over checks the other side after it took it: the Idempotency-Key in
 * the same document (a take-over needs no payment committed to the key; see idempotency.ts), the agent's lock by
 * awaiting the agent's payments in flight (recover.ts, awaitQuiet) once it has the lock. Every step is one atomic
 * operation on one document, so in any order they run, either the stalled holder's check sees the lease moved on (it
 * stops before sending anything), or the new holder sees its payment in flight (and waits for it, or answers the key
 * with it). How long the stall was does not matter. The budget itself is the contract's, whatever happens here.
 * A stall between this commit and the authorisation longer than PAYMENT_LEASE_MS lets recovery claim the payment:
 * recovery then voids its paymentId on-chain (release.ts, voidUnsent), after which the stalled run's authorisation
 * can only revert, and calls the payment failed at once. Only where the void cannot be sent does it wait for the
 * chain to pass the transfer's validBefore (pastValidity), from when on the contract refuses to authorise it too.
 */
export async function begin(
  room: Room,
  p: {
    txnId: string;
    base: LedgerBase & { createdAt?: Date };
    amount: bigint;
    signed: Pick<SignedPayment, "nonce" | "transfer">;
    fences: Fence[];
    /** What a scheme beyond exact records from the start (scheme.ts). */
    extra?: LedgerUpdate;
    /**
     * A write the payment needs before it commits (a channel's voucher sequence), made beside the entry's: when it
     * fails, the entry is undone and its error thrown, with nothing committed or sent.
     */
    alongside?: Promise<unknown>;
  },
): Promise<void> {
  const { txnId, base, signed } = p;
  const { transfer } = signed;
  const now = new Date();
  const { createdAt, ...baseFields } = base;
  const quoted = createdAt !== undefined;
  const writing = room.ledger.begin(
    txnId,
    {
      ...baseFields,
      amount: p.amount.toString(),
      status: "processing",
      reason: null,
      paymentId: signed.nonce,
      txHash: null,
      authorizeTxHash: null,
      releaseTxHash: null,
      payTo: transfer.payTo,
      validAfter: Number(transfer.validAfter),
      validBefore: Number(transfer.validBefore),
      leaseUntil: lease(room),
      instanceId: room.ctx.instanceId,
      updatedAt: now,
      settledAt: null,
      onchain: { confirmed: false, blockNumber: null },
      ...p.extra,
    },
    quoted,
    now,
  );
  const [entry, side] = await Promise.allSettled([writing, p.alongside]);
  if (entry.status === "rejected") throw entry.reason;
  const written = entry.value;
  if (side.status === "rejected") {
    if (written) await room.ledger.undoUncommitted(txnId, !quoted);
    throw side.reason;
  }
  // An approval whose entry is not waiting any more was finished by another run: nothing of this one is sent.
  if (!written) throw new LeaseLostError();
  if (!p.fences.length) return;
  const held = await Promise.all(p.fences.map((f) => f.hold(txnId)));
  if (held.every(Boolean)) return;
  await Promise.all(p.fences.map(async (f, i) => (held[i] ? f.letGo?.(txnId) : undefined)));
  // Undone: a new entry goes, an approved one goes back to waiting for its approval.
  await room.ledger.undoUncommitted(txnId, !quoted);
  room.ctx.logger.warn({ txnId }, "a lease this payment ran under was taken over (this instance stalled); stopped before paying");
  throw new LeaseLostError();
}

/**
 * authorizePayment for the written-down payment: its transaction hash is noted on the entry as soon as it is sent
 * (`sent` runs then too), so recovery reads its receipt rather than voiding it while it may still land. On a node that
 * mines what it receives at once (receipts.immediate) the receipt is there as soon as the hash, and the hash goes on
 * the entry with the authorised mark or the outcome instead (markAuthorized, blockedOnchain): one write fewer. A run
 * killed between the two leaves an entry with no hash, which recovery voids (release.ts voidUnsent): the void finds the
 * authorisation recorded, and the payment is released. A transaction that fails (reverts, or never lands) is an
 * upstream error with nothing paid; its hash, when known, is noted then, and the caller resolves the entry from the
 * chain.
 */
export async function authorize(
  room: Room,
  p: {
    txnId: string;
    base: LedgerBase;
    signed: Pick<SignedPayment, "nonce" | "transfer">;
    proof: AllowlistProof;
    approval?: OwnerApprovalInput;
    sent?: () => void;
    /** The authorisation of a scheme beyond exact (authorizeCeiling, authorizeDeposit); authorizePayment otherwise. */
    call?: (onSent: (hash: string) => Promise<void>) => Promise<AuthorizeResult>;
  },
): Promise<{ kind: "sent"; result: AuthorizeResult } | { kind: "failed"; error: AppError }> {
  const { txnId, base, signed } = p;
  let sentHash: string | null = null;
  try {
    const onSent = (hash: string) => {
      p.sent?.();
      sentHash = hash;
      if (room.ctx.chain.receipts.immediate) return Promise.resolve();
      return note(room, txnId, "authorizing", { authorizeTxHash: hash }).then(() => undefined);
    };
    const result = await room.ctx.telemetry.step("authorize", () =>
      p.call
        ? p.call(onSent)
        : room.ops.authorize(base.policyAddress, signed.nonce, base.merchant, p.proof, signed.transfer, p.approval ?? NO_APPROVAL, onSent),
    );
    return { kind: "sent", result };
  } catch (err) {
    room.ctx.logger.error({ err, txnId }, "authorizePayment failed");
    if (sentHash && room.ctx.chain.receipts.immediate)
      await note(room, txnId, "authorizing", { authorizeTxHash: sentHash }).catch(() => false);
    // A reverted authorisation (the owner set another operator, say) is the owner's gas too.
    await room.ctx.gas.charge(base.ownerAddress, await room.ctx.chain.receiptOfFailure(err));
    return { kind: "failed", error: upstreamError("The payment could not be authorised on-chain; nothing was paid. Try again.") };
  }
}

/** An authorisation the contract blocked (PaymentBlocked): the entry is finished "blocked" with its reason; the answer. */
export async function blockedOnchain(
  room: Room,
  p: { txnId: string; base: LedgerBase; amount: bigint; result: AuthorizeResult },
): Promise<Blocked> {
  const { txnId, base, result } = p;
  await finish(room, txnId, ["authorizing"], {
    status: "blocked",
    reason: result.reason,
    txHash: result.txHash,
    authorizeTxHash: result.txHash,
    onchain: { confirmed: false, blockNumber: result.blockNumber },
  });
  const outcome = blockedOutcome({
    reason: result.reason ?? "blocked",
    txHash: result.txHash,
    amount: p.amount,
    merchant: base.merchant,
    intent: base.intent,
    transactionId: txnId,
  });
  return { kind: "blocked", outcome };
}

/** The authorisation landed: the entry moves to "authorized" with its transaction and block (its lease renewed). */
export function markAuthorized(room: Room, txnId: string, result: AuthorizeResult): Promise<boolean> {
  return room.ledger.move(
    txnId,
    ["authorizing"],
    "authorized",
    inFlight(room, { authorizeTxHash: result.txHash, authorizeBlock: result.blockNumber }),
  );
}
