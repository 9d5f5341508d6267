/**
 * The schemes beyond exact (docs/schemes.md): which one a quote is paid with, and the policy's decision for what it
 * authorises (an upto ceiling, a channel deposit). The same simulation as an exact payment's: every check the wallet
 * makes on authorizeCeiling / authorizeDeposit is authorizePayment's.
 */
import { appError } from "../../errors";
import type { Quote } from "../../x402/pick";
import type { PaymentContext, Room } from "../context";
import type { Admission } from "../decide";
import { payChannel } from "./channel";
import { refuse } from "../refuse";
import { type PaymentResult, refused } from "../result";
import { payUpto } from "./upto";

/** An upto or batch-settlement payment; "exact" when it needs the owner's approval and is to be paid as exact instead. */
export async function payScheme(
  room: Room,
  pc: PaymentContext,
  q: Quote,
  admission: Admission & { status: "admitted" },
): Promise<PaymentResult | "exact"> {
  const paid = await payOther(room, pc, q, admission);
  // A failed payment reads the policy again next time (a stale copy fails once, not in a loop).
  if (paid !== "exact" && paid.kind === "refused") room.decisions.forget(pc.agent);
  return paid;
}

async function payOther(
  room: Room,
  pc: PaymentContext,
  q: Quote,
  admission: Admission & { status: "admitted" },
): Promise<PaymentResult | "exact"> {
  if (q.scheme === "batch-settlement") return payChannel(room, pc, q, admission);
  const payTo = q.requirement.payTo;
  const decision = await room.ctx.telemetry.step("decide", () => room.decisions.decide(pc.agent, pc.merchant, admission, q.amount, payTo));
  if (decision.status === "block") return refuse(room, pc, { amount: q.amount, reason: decision.reason, proof: decision.proof, payTo });
  if (decision.status === "requires_approval") return "exact";
  const swap = await decision.swap;
  if (swap.kind !== "none") {
    const detail =
      swap.kind === "refuse" ? swap.detail : "the wallet lacks the USDC, and swaps before paying are made for exact payments only";
    return refuse(room, pc, { amount: q.amount, reason: "insufficient_funds", proof: null, detail });
  }
  return payUpto(room, pc, { quote: q, proof: decision.proof, dailyBudget: decision.policy.dailyBudget });
}

/** A payment above the approval threshold that only a scheme beyond exact could pay. */
export function approvalNeedsExact(q: Quote) {
  return refused(
    appError(
      "unsupported_payment",
      `This payment needs the owner's approval, and an owner approves exact payments only; the seller offers ${q.scheme}, not exact. Nothing was paid.`,
    ),
  );
}
