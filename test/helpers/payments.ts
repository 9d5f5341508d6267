/** Helpers for payment tests: owner approval signatures and reading the policy's events from a receipt. */
import type { Wallet } from "ethers";
import { ZeroAddress, getAddress } from "ethers";
import { APPROVAL_DECISION_TYPES, policyDomain } from "../../src/chain/typedData";
import { toBaseUnits } from "../../src/amounts";
import { ledgerEntry, type LedgerBase, type LedgerFields } from "../../src/payments/phases";
import type { PaymentDoc } from "../../src/store/documents";
import type { Stack } from "./stack";

/**
 * What a run killed between its commit and its authorisation leaves in the ledger, written as the service writes
 * entries (ledgerEntry): `agent`'s payment of `amount` base units to 127.0.0.1, processing and authorizing, plus what
 * `fields` says it already knew (its paymentId, its lease); `base` overrides the entry's base (its URL, intent, scope).
 */
export function inFlightEntry(
  txnId: string,
  agent: { agentAddress: string; policyContract: string },
  amount: bigint,
  fields: Omit<Partial<LedgerFields>, "amount">,
  base: Partial<LedgerBase> = {},
  now?: Date,
): PaymentDoc {
  const entryBase: LedgerBase = {
    agentAddress: agent.agentAddress,
    ownerAddress: null,
    policyAddress: agent.policyContract,
    merchant: "127.0.0.1",
    serviceUrl: "http://127.0.0.1/x",
    currency: "USDC",
    intent: "left by a dead run",
    approvalId: null,
    ...base,
  };
  return ledgerEntry(txnId, entryBase, { status: "processing", phase: "authorizing", ...fields, amount: amount.toString() }, now);
}

/** The owner's ApprovalDecision signature body for approve or deny of an approval. */
export async function approvalDecision(
  s: Stack,
  owner: Wallet,
  a: { id: string; agentAddress: string; merchant: string; amount: string; payTo?: string | null },
  action: "approve" | "deny",
  timestamp = s.now(),
): Promise<{ humanSignature: string; timestamp: number }> {
  const policy = getAddress(a.agentAddress);
  // The payee the approval names (GET /approvals shows it; a pay answer does not, so it is read from the store).
  const payTo = a.payTo ?? (await s.svc.store.approvals.findOne({ approvalId: a.id }))?.payTo ?? ZeroAddress;
  const humanSignature = await owner.signTypedData(policyDomain(8453, policy), APPROVAL_DECISION_TYPES, {
    action,
    approvalId: a.id,
    agent: a.agentAddress,
    merchant: a.merchant,
    payTo,
    amount: toBaseUnits(a.amount),
    timestamp,
  });
  return { humanSignature, timestamp };
}

/** The SpendPolicy events in a transaction's receipt, decoded. */
export async function policyEvents(s: Stack, policyAddress: string, txHash: string) {
  const receipt = await s.svc.chain.provider.getTransactionReceipt(txHash);
  if (!receipt) throw new Error(`no receipt for ${txHash}`);
  const c = s.svc.chain.policyAt(policyAddress, s.svc.chain.provider);
  return receipt.logs
    .filter((l) => l.address.toLowerCase() === policyAddress.toLowerCase())
    .map((l) => c.interface.parseLog(l))
    .filter((e): e is NonNullable<typeof e> => e !== null);
}

export async function spentToday(s: Stack, policyAddress: string): Promise<bigint> {
  return s.svc.chain.policyAt(policyAddress, s.svc.chain.provider).spentToday();
}
