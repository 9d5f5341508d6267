/**
 * The rules an authorised payment passed, replayed from its PaymentAuthorized and the policy in force (audit.ts).
 */
import { ZeroAddress } from "ethers";
import { leafMatches } from "../policy/allowlist";
import type { AuditAgent, AuditLeaf, AuditPayment, AuditReport } from "./auditTypes";

/**
 * The rules an authorised payment passed, replayed from its PaymentAuthorized and the policy in force: its leaf is one
 * of the entries the owner signed (entry, cap and payee) and admits its merchant, names its payTo (or payee 0), and its entry's daily cap holds the day's authorisations under it (counted
 * as the contract counts them: capped leaves only, a release gives nothing back); the policy was not paused, and the
 * amount is within perTxLimit and, unless the owner approved it, the approval threshold. Fills the leaf and payee summary.
 */
export function replayRules(
  report: AuditReport,
  a: AuditAgent,
  p: AuditPayment & { payTo: string },
  leaf: AuditLeaf,
  policy: AuditAgent["policies"][number] | undefined,
  entrySpend: Map<string, bigint>,
  approved: boolean,
): void {
  const amount = BigInt(p.amount);
  const where = `${a.agent} ${p.paymentId}`;
  // The contract proves the leaf against the root it derived from the signed list: a leaf outside it means the root in
  // force was not the one the owner signed (storage written behind the contract's back).
  if (policy && !policy.merchants.some((m) => m.entry === leaf.entry && m.dailyCap === leaf.dailyCap && m.payee === leaf.payee))
    report.inconsistencies.push(
      `${where}: authorised under leaf ${JSON.stringify(leaf.entry)} (cap ${leaf.dailyCap}, payee ${leaf.payee}), which is not in the list the owner signed in policy ${policy.version}`,
    );
  if (!leafMatches(leaf.entry, p.merchant))
    report.inconsistencies.push(`${where}: leaf ${JSON.stringify(leaf.entry)} does not admit ${p.merchant}`);
  if (leaf.payee !== ZeroAddress && leaf.payee !== p.payTo)
    report.inconsistencies.push(`${where}: pays ${p.payTo}, but its leaf ${JSON.stringify(leaf.entry)} names payee ${leaf.payee}`);
  if (leaf.dailyCap !== "0") {
    const key = `${a.agent}|${p.day}|${leaf.entry}`;
    const spent = (entrySpend.get(key) ?? 0n) + amount;
    entrySpend.set(key, spent);
    if (spent > BigInt(leaf.dailyCap))
      report.inconsistencies.push(
        `${where}: ${spent} authorised under ${JSON.stringify(leaf.entry)} on ${p.day}, past its cap ${leaf.dailyCap}`,
      );
  }
  if (a.pauses.at(-1)?.paused) report.inconsistencies.push(`${where}: authorised while paused`);
  if (policy && amount > BigInt(policy.perTxLimit))
    report.inconsistencies.push(`${where}: ${amount} is above perTxLimit ${policy.perTxLimit} of policy ${policy.version}`);
  if (policy && !approved && amount > BigInt(policy.approvalThreshold))
    report.inconsistencies.push(`${where}: ${amount} is above the approval threshold ${policy.approvalThreshold} with no ApprovalUsed`);

  let summary = a.leaves.find((l) => l.entry === leaf.entry && l.dailyCap === leaf.dailyCap && l.payee === leaf.payee);
  if (!summary) a.leaves.push((summary = { ...leaf, payments: 0, amount: "0", days: {} }));
  summary.payments++;
  summary.amount = (BigInt(summary.amount) + amount).toString();
  if (leaf.dailyCap !== "0") summary.days[p.day] = (entrySpend.get(`${a.agent}|${p.day}|${leaf.entry}`) ?? 0n).toString();
  const payee = (a.payees[p.payTo] ??= { payments: 0, amount: "0", namedBy: [] });
  payee.payments++;
  payee.amount = (BigInt(payee.amount) + amount).toString();
  if (leaf.payee === p.payTo && !payee.namedBy.includes(leaf.entry)) payee.namedBy.push(leaf.entry);
}
