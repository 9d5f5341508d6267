/**
 * A settlement the seller reports broadcast and not yet confirmed (x402 `settlement_pending`, with its transaction
 * hash): neither failed nor approved. The hash is believed only for what the chain shows of it: a transaction calling
 * USDC's transferWithAuthorization with exactly this payment's transfer (from the agent's wallet, to its payee, its
 * amount and nonce). The payment then waits for it, and is decided from the chain: mined with this payment's
 * AuthorizationUsed (approved, with that hash), or reverted, dropped, or past the transfer's validBefore (released:
 * failed). A run that stops meanwhile leaves the hash on the entry, and recovery decides the same way (recover.ts).
 */
import type { TransactionResponse } from "ethers";
import type { PaymentDoc } from "../store/documents";
import { type Room, note } from "./context";
import { pastValidity } from "./release";

/** How long one look for the receipt waits; the entry's lease is renewed between looks. */
const LOOK_MS = 2_000;

/** What is known of the payment: its entry's fields the check and the wait read. */
type PendingPayment = Pick<PaymentDoc, "txnId" | "agentAddress" | "amount" | "payTo" | "validBefore"> & { paymentId: string };

export type PendingOutcome = { kind: "settled"; txHash: string } | { kind: "unsettled"; reason: string };

/** Whether `tx` is USDC's transferWithAuthorization (either form) of exactly payment `p`'s transfer. */
export function isTransferOf(room: Room, tx: Pick<TransactionResponse, "to" | "data">, p: PendingPayment): boolean {
  const usdc = room.ctx.chain.usdc;
  if (!tx.to || tx.to.toLowerCase() !== room.ctx.config.usdcAddress.toLowerCase()) return false;
  let call;
  try {
    call = usdc.interface.parseTransaction({ data: tx.data });
  } catch {
    return false;
  }
  if (call?.name !== "transferWithAuthorization") return false;
  const [from, to, value, , , nonce] = call.args as unknown as [string, string, bigint, bigint, bigint, string];
  return (
    from.toLowerCase() === p.agentAddress.toLowerCase() &&
    !!p.payTo &&
    to.toLowerCase() === p.payTo.toLowerCase() &&
    value === BigInt(p.amount) &&
    nonce.toLowerCase() === p.paymentId.toLowerCase()
  );
}

/**
 * Waits for the settlement `txHash` the seller reported pending, once the chain shows it carries this payment's
 * transfer (noted on the entry first), until the chain decides it.
 */
export async function awaitPendingSettlement(room: Room, p: PendingPayment, txHash: string): Promise<PendingOutcome> {
  const { ctx, ops } = room;
  const provider = ctx.chain.provider;
  const tx = await provider.getTransaction(txHash).catch(() => null);
  if (!tx) return { kind: "unsettled", reason: `settlement_pending with transaction ${txHash}, which the chain does not know` };
  if (!isTransferOf(room, tx, p)) {
    return { kind: "unsettled", reason: `settlement_pending with transaction ${txHash}, which is not this payment's transfer` };
  }
  await note(room, p.txnId, "authorized", { pendingSettlementTx: txHash });
  // A node that does not answer proves nothing: looked at again, up to the transfer's validity (wall clock) and a
  // minute more; then the release step decides, or leaves the payment to recovery while the chain is out of reach.
  const until = Date.now() + Math.max(0, (p.validBefore ?? 0) * 1000 - Date.now()) + 60_000;
  for (;;) {
    const receipt = await ctx.chain.receiptOf(txHash, LOOK_MS).catch(() => null);
    if (receipt) {
      if (receipt.status === 1 && (await ops.settledIn(txHash, p.agentAddress, p.paymentId))) return { kind: "settled", txHash };
      return { kind: "unsettled", reason: `its settlement ${txHash} reverted` };
    }
    const seen = await provider.getTransaction(txHash).then(
      (tx) => (tx ? "pending" : "dropped"),
      () => "unknown",
    );
    if (seen === "dropped") return { kind: "unsettled", reason: `its settlement ${txHash} was dropped before it was mined` };
    if (seen === "pending" && (await pastValidity(room, p).catch(() => false))) {
      return { kind: "unsettled", reason: `its settlement ${txHash} was not mined before the transfer expired` };
    }
    if (Date.now() > until) return { kind: "unsettled", reason: `its settlement ${txHash} was not seen mined` };
    // Still on its way: this run still owns the payment (recovery leaves it alone while the lease holds).
    await note(room, p.txnId, "authorized", {});
  }
}

/**
 * Whether a payment recovery finds with a reported pending settlement may still settle: its transaction is known to
 * the chain, not mined, and the transfer not yet expired (recovery then tries again later).
 */
export async function stillPending(room: Room, doc: PaymentDoc): Promise<boolean> {
  const hash = doc.pendingSettlementTx;
  if (!hash) return false;
  const provider = room.ctx.chain.provider;
  if (await provider.getTransactionReceipt(hash).catch(() => null)) return false;
  if (!(await provider.getTransaction(hash).catch(() => null))) return false;
  return !(await pastValidity(room, doc));
}
