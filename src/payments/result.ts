/**
 * One result shape for what a payment, or a step of it, ends in (`kind`): an outcome the agent is told, or a refusal
 * with nothing paid. Refusals are values, not exceptions: an exception is something nobody expected (and, once the
 * signed payment has left, the chain decides what it was: execute.ts).
 */
import type { AppError } from "../errors";
import type { PayAnswer, PayApproved, PayBlocked, PayOutcome, PayPending } from "../schemas/payments";
import { errorBody } from "../errors";

export type Approved = { kind: "approved"; outcome: PayApproved };
export type Blocked = { kind: "blocked"; outcome: PayBlocked };
export type Pending = { kind: "pending"; outcome: PayPending };
/** Nothing was paid: an error answer (`retryable` ones free an Idempotency-Key). */
export type Refused = { kind: "refused"; error: AppError };

export type PaymentResult = Approved | Blocked | Pending | Refused;

export const refused = (error: AppError): Refused => ({ kind: "refused", error });

/** The result of an outcome of the interface (approved, blocked, pending). */
export function resultOf(outcome: PayOutcome): Approved | Blocked | Pending {
  if (outcome.status === "approved") return { kind: "approved", outcome };
  if (outcome.status === "blocked") return { kind: "blocked", outcome };
  return { kind: "pending", outcome };
}

/** A result as the interface answers it (POST /pay, MCP pay, an Idempotency-Key's record). */
export function answerOf(r: PaymentResult): PayAnswer {
  if (r.kind === "refused") return { error: errorBody(r.error), ...(r.error.headers ? { headers: r.error.headers } : {}) };
  return { outcome: r.outcome };
}
