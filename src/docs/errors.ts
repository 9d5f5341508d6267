/** Every error code the service answers with, every block reason and ledger status: the API reference's tables. */
import { ERROR_CATALOGUE, type ErrorCode } from "../errors";
import { REASON_TABLE } from "../chain/reasons";
import type { LedgerStatus } from "../store/documents";

export interface ErrorCodeDoc {
  status: number;
  meaning: string;
}

/** `error` codes of `{ error, message, status }` bodies with their status and meaning: the catalogue in src/errors.ts. */
export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeDoc>> = ERROR_CATALOGUE;

/** `reason` of a blocked payment (422 `{ status: "blocked" }`). */
export const BLOCK_REASONS: Record<string, string> = Object.fromEntries(
  REASON_TABLE.map((r) => [r.name, r.code === null ? r.meaning : `${r.meaning} (on-chain reason ${r.code})`]),
);

export const LEDGER_STATUSES: Record<LedgerStatus, string> = {
  approved: "paid and settled",
  blocked:
    "refused by the policy (PaymentBlocked on-chain, including a swap past its bound), by the caller's maxAmount, or for want of funds",
  pending: "above the approval threshold; waits for the owner",
  denied: "the owner denied it",
  failed: "authorised but not settled; the day's budget was released",
  expired: "an approval nobody decided in time (APPROVAL_TTL)",
  processing: "between authorisation and settlement; a restart resolves it from chain state",
};
