/**
 * The service's ledger (GET /ledger) held against the chain's story (auditFromLogs). Whoever controls the server
 * controls its database, but not the chain's events: an entry dropped, an amount, payee or status rewritten, or a
 * settlement put on another payment shows up here as a disagreement.
 */
import { getAddress } from "ethers";
import { toBaseUnits } from "../amounts";
import type { AuditAgent, AuditPayment, AuditReport } from "./audit";

/** The fields of a GET /ledger transaction this check reads. */
export interface LedgerTransaction {
  id: string;
  agentAddress: string;
  amount: string;
  status: string;
  reason: string | null;
  txHash: string | null;
  paymentId: string | null;
  payTo: string | null;
  authorizeTxHash: string | null;
  releaseTxHash: string | null;
  swap?: { txHash: string } | null;
  /** Absent: exact (a ledger from before the schemes). */
  scheme?: string;
  ceiling?: string | null;
  channel?: { channelId: string; cumulative: string; deposit: string | null } | null;
  /** The seller's receipt as the service checked it (docs/receipts.md); absent from ledgers before receipts. */
  receipt?: { signer: string | null; issuedAt: number | null; verified: boolean; problem?: string } | null;
}

/**
 * The approved entries by their proof of purchase (docs/receipts.md): a receipt the service verified, one it flagged
 * (with why), or none (the seller signed no offer). Receipts are the sellers' word, not the chain's: this tells what
 * the ledger holds; the signed receipts themselves are on its entries, for anyone to verify again.
 */
export function receiptSummary(ledger: LedgerTransaction[]): {
  verified: number;
  flagged: { id: string; problem: string }[];
  none: number;
} {
  const approved = ledger.filter((t) => t.status === "approved");
  return {
    verified: approved.filter((t) => t.receipt?.verified === true).length,
    flagged: approved
      .filter((t) => t.receipt?.verified === false)
      .map((t) => ({ id: t.id, problem: t.receipt?.problem ?? "not verified" })),
    none: approved.filter((t) => !t.receipt).length,
  };
}

const same = (a: string | null | undefined, b: string | null | undefined) => !!a && !!b && a.toLowerCase() === b.toLowerCase();
/** Money left under it: settled, or a deposit that landed or a ceiling settled under, whether credited since or not. */
const moved = (p: AuditPayment) => p.status === "settled" || (p.status === "credited" && p.scheme?.moved !== "0");
/** Nothing left under it: released, or a deposit or ceiling credited in full before any of it moved. */
const givenBack = (p: AuditPayment) => p.status === "released" || (p.status === "credited" && p.scheme?.moved === "0");

/**
 * Every place where `ledger` and the chain disagree, for the agents in `ledger` and in `agents` (an agent with no
 * entry at all, whose on-chain payments the ledger then lacks). Empty when they agree. `ledgerBlock`: the chain's
 * head when the ledger was read (a refusal is written to the ledger after its block, so a later one may be missing).
 */
export function ledgerDisagreements(
  report: AuditReport,
  ledger: LedgerTransaction[],
  agents: Iterable<string> = [],
  ledgerBlock = Infinity,
): string[] {
  const problems: string[] = [];
  const byAgent = new Map<string, LedgerTransaction[]>();
  for (const a of agents) byAgent.set(getAddress(a), []);
  for (const t of ledger) {
    const a = getAddress(t.agentAddress);
    byAgent.set(a, [...(byAgent.get(a) ?? []), t]);
  }
  for (const [agent, entries] of byAgent) {
    const onchain = report.agents[agent];
    if (!onchain) {
      for (const t of entries.filter((t) => t.paymentId || t.txHash))
        problems.push(`${t.id}: ${t.status} entry of ${agent}, an agent the factory never deployed`);
      continue;
    }
    problems.push(...agentDisagreements(onchain, entries, ledgerBlock));
  }
  return problems;
}

function agentDisagreements(onchain: AuditAgent, entries: LedgerTransaction[], ledgerBlock: number): string[] {
  const problems: string[] = [];
  const byId = new Map<string, AuditPayment>(onchain.payments.map((p) => [p.paymentId.toLowerCase(), p]));
  const claimed = new Map<string, string>(); // paymentId -> the entry that says it settled
  for (const t of entries) {
    // A channel voucher is off-chain (the channel contract bounds it by the deposits): nothing of its own to hold.
    if (t.scheme === "batch-settlement" && !t.paymentId) continue;
    const p = t.paymentId ? byId.get(t.paymentId.toLowerCase()) : undefined;
    if (p && t.scheme && t.scheme !== "exact") {
      problems.push(...schemeDisagreements(t, p, `${t.id} (${t.status}, ${onchain.agent})`));
      claimed.set(p.paymentId, t.id);
      continue;
    }
    const amount = toBaseUnits(t.amount).toString();
    const where = `${t.id} (${t.status}, ${onchain.agent})`;
    if (t.status === "approved") {
      if (!p) {
        problems.push(`${where}: no payment ${t.paymentId ?? "(none)"} authorised on-chain`);
        continue;
      }
      const other = claimed.get(p.paymentId);
      if (other) problems.push(`${where}: payment ${p.paymentId} is also the settlement of ${other}`);
      claimed.set(p.paymentId, t.id);
      if (!moved(p)) problems.push(`${where}: payment ${p.paymentId} is ${p.status} on-chain`);
      if (p.amount !== amount) problems.push(`${where}: amount ${amount}, authorised on-chain ${p.amount}`);
      if (!same(p.payTo, t.payTo)) problems.push(`${where}: payTo ${t.payTo}, authorised on-chain ${p.payTo}`);
      if (!same(p.settleTx, t.txHash)) problems.push(`${where}: txHash ${t.txHash}, settled on-chain in ${p.settleTx}`);
      if (!same(p.authorizeTx, t.authorizeTxHash))
        problems.push(`${where}: authorizeTxHash ${t.authorizeTxHash}, on-chain ${p.authorizeTx}`);
      if (!same(p.swap?.txHash, t.swap?.txHash) && (p.swap || t.swap))
        problems.push(`${where}: swap ${t.swap?.txHash ?? "none"}, on-chain ${p.swap?.txHash ?? "none"}`);
    } else if (t.status === "blocked" && t.txHash && !p) {
      const b = onchain.blocked.find((x) => same(x.authorizeTx, t.txHash) && x.amount === amount && x.reason === t.reason);
      if (!b) problems.push(`${where}: no PaymentBlocked of ${amount} for ${t.reason ?? "?"} in ${t.txHash}`);
    } else if (p && t.status !== "processing" && !givenBack(p)) {
      // failed, blocked after its authorisation (a refused swap), pending, denied, expired: nothing may have stayed.
      problems.push(`${where}: payment ${p.paymentId} is ${p.status} on-chain`);
    } else if (p && t.releaseTxHash && !same(p.releaseTx, t.releaseTxHash)) {
      problems.push(`${where}: releaseTxHash ${t.releaseTxHash}, released on-chain in ${p.releaseTx}`);
    }
  }
  // What the chain did that no entry tells.
  const ids = new Set(entries.flatMap((t) => (t.paymentId ? [t.paymentId.toLowerCase()] : [])));
  const txs = new Set(entries.flatMap((t) => [t.txHash, t.authorizeTxHash].filter((h): h is string => !!h).map((h) => h.toLowerCase())));
  for (const p of onchain.payments.filter((x) => x.authorizeBlock <= ledgerBlock)) {
    if (!ids.has(p.paymentId.toLowerCase()))
      problems.push(`${onchain.agent}: ${p.status} payment ${p.paymentId} (${p.amount}) is not in the ledger`);
  }
  for (const b of onchain.blocked.filter((x) => x.authorizeBlock <= ledgerBlock)) {
    if (!txs.has(b.authorizeTx.toLowerCase()) && !ids.has(b.paymentId.toLowerCase()))
      problems.push(`${onchain.agent}: ${b.reason ?? "blocked"} refusal of ${b.amount} in ${b.authorizeTx} is not in the ledger`);
  }
  return problems;
}

/**
 * A deposit's or a ceiling's entry against its on-chain authorisation: the scheme, the amount authorised (the
 * deposit, the ceiling), and for a ceiling what the seller settled under it. A channel request whose deposit landed
 * may have failed all the same: its deposit is held in the channel (the channel's own totals tell it).
 */
function schemeDisagreements(t: LedgerTransaction, p: AuditPayment, where: string): string[] {
  const problems: string[] = [];
  if (!p.scheme || p.scheme.name !== t.scheme) problems.push(`${where}: a ${t.scheme} entry, on-chain ${p.scheme?.name ?? "exact"}`);
  const authorized = t.scheme === "upto" ? t.ceiling : t.channel?.deposit;
  if (authorized === undefined || authorized === null || toBaseUnits(authorized).toString() !== p.amount)
    problems.push(`${where}: ${t.scheme === "upto" ? "ceiling" : "deposit"} ${authorized ?? "none"}, authorised on-chain ${p.amount}`);
  if (t.scheme === "upto" && t.status === "approved" && p.scheme && toBaseUnits(t.amount).toString() !== p.scheme.moved)
    problems.push(`${where}: settled ${toBaseUnits(t.amount)}, on-chain ${p.scheme.moved} left under the ceiling`);
  if (t.scheme === "upto" && t.status !== "approved" && t.status !== "processing" && p.scheme && p.scheme.moved !== "0")
    problems.push(`${where}: ${p.scheme.moved} left under the ceiling on-chain`);
  if (!same(p.authorizeTx, t.authorizeTxHash)) problems.push(`${where}: authorizeTxHash ${t.authorizeTxHash}, on-chain ${p.authorizeTx}`);
  return problems;
}

/** Every entry of GET /ledger that `key` (an owner's or an agent's) may read, page by page. */
export async function fetchLedger(baseUrl: string, key: string): Promise<LedgerTransaction[]> {
  // Newest first: an entry written meanwhile moves the next page by one, so an entry may come twice.
  const entries = new Map<string, LedgerTransaction>();
  for (let offset = 0; ;) {
    const res = await fetch(`${baseUrl.replace(/\/+$/, "")}/ledger?limit=200&offset=${offset}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const body = (await res.json()) as { transactions?: LedgerTransaction[]; total?: number; message?: string };
    if (!res.ok || !body.transactions) throw new Error(`GET /ledger answered ${res.status}: ${body.message ?? "no transactions"}`);
    for (const t of body.transactions) entries.set(t.id, t);
    offset += body.transactions.length;
    if (body.transactions.length === 0 || offset >= (body.total ?? 0)) return [...entries.values()];
  }
}
