/**
 * Every USDC and WETH Transfer out of an agent wallet, held against what may explain it (DESIGN.md 4: USDC leaves a
 * wallet by an EIP-3009 transfer its policy authorised, or by the owner's Withdraw; WETH by a swap before settlement or a
 * Withdraw). An outflow nothing explains is an anomaly: it names the transaction, the token, the recipient and the
 * amount. The explanations are events of the same transaction:
 * - settlement: USDC AuthorizationUsed (authorizer the wallet, nonce a PaymentAuthorized paymentId) whose payment's
 *   amount and payTo are the transfer's;
 * - withdrawal: the wallet's Withdrawn of that token, recipient and amount;
 * - swap: the wallet's SwapExecuted whose amountIn is the WETH sent, to the pool that paid its amountOut USDC into the
 *   wallet in that transaction (or a router or pool the auditor names);
 * - deposit: an authorised channel deposit landing in that transaction (auditSchemes.ts), of that amount, to the
 *   deposit collector (or the channel contract);
 * - ceiling: an open upto ceiling to that payee with that much left (auditSchemes.ts; Permit2 leaves no other trace).
 */
import { getAddress, type Log } from "ethers";
import { parseEvent } from "../chain/contracts";
import { order } from "./auditLogs";
import type { Checks, DepositLanding, SchemeAudit } from "./auditSchemes";
import type { AuditPayment, AuditReport } from "./auditTypes";

export type OutflowExplanation = "settlement" | "withdrawal" | "swap" | "deposit" | "ceiling";

export interface AuditOutflow {
  txHash: string;
  logIndex: number;
  blockNumber: number;
  token: "USDC" | "WETH";
  tokenAddress: string;
  to: string;
  amount: string;
  /** null: nothing explains it (an anomaly, unless the amount is 0). */
  explainedBy: OutflowExplanation | null;
  /** The payment a settlement, a swap, a deposit or a ceiling was for. */
  paymentId?: string;
}

/** The events of one transaction that may explain an outflow, gathered while the agents' logs are read. */
export interface TxExplanations {
  settlements: { agent: string; paymentId: string; index: number; used: boolean }[];
  withdrawals: { agent: string; token: string; to: string; amount: bigint; index: number; used: boolean }[];
  swaps: { agent: string; paymentId: string; amountIn: bigint; amountOut: bigint; index: number; used: boolean }[];
  /** USDC Transfers into an agent wallet (a swap's pool pays its amountOut). */
  usdcIn: { from: string; agent: string; amount: bigint }[];
  /** Channel deposits landing (USDC AuthorizationUsed under the collector's nonce, then the channel's Deposited). */
  deposits: DepositLanding[];
}

export const emptyExplanations = (): TxExplanations => ({ settlements: [], withdrawals: [], swaps: [], usdcIn: [], deposits: [] });

/** A Transfer(address indexed, address indexed, uint256) log's parties and value (USDC's and WETH9's names differ). */
export function transferOf(log: Pick<Log, "topics" | "data">): { from: string; to: string; amount: bigint } | null {
  if (log.topics.length !== 3 || log.data.length !== 66) return null;
  return {
    from: getAddress("0x" + log.topics[1].slice(26)),
    to: getAddress("0x" + log.topics[2].slice(26)),
    amount: BigInt(log.data),
  };
}

/**
 * Explains one Transfer out of `agent` from the events of its transaction, consuming the explanation it uses (one
 * settlement, withdrawal, swap or deposit explains one transfer). `payment(agent, paymentId)` is the authorised payment's
 * amount and payTo; `counterparties` are addresses a swap may pay WETH to beyond the pool seen paying USDC back;
 * `depositTargets` where a deposit's USDC goes (the deposit collectors, the channel contract).
 */
export function explainOutflow(
  log: Log,
  t: { from: string; to: string; amount: bigint },
  token: { symbol: "USDC" | "WETH"; address: string },
  tx: TxExplanations | undefined,
  payment: (agent: string, paymentId: string) => { amount: string; payTo: string | null } | undefined,
  counterparties: ReadonlySet<string>,
  depositTargets: ReadonlySet<string> = new Set(),
): AuditOutflow {
  const out: AuditOutflow = {
    txHash: log.transactionHash,
    logIndex: log.index,
    blockNumber: log.blockNumber,
    token: token.symbol,
    tokenAddress: token.address,
    to: t.to,
    amount: t.amount.toString(),
    explainedBy: null,
  };
  if (!tx) return out;
  // The nearest preceding explanation first (USDC emits AuthorizationUsed just before its Transfer).
  const nearest = <T extends { index: number }>(xs: T[]) =>
    [...xs].sort((a, b) => Math.abs(a.index - log.index) - Math.abs(b.index - log.index) || b.index - a.index);
  if (token.symbol === "USDC") {
    const s = nearest(tx.settlements).find((x) => {
      if (x.used || x.agent !== t.from) return false;
      const p = payment(x.agent, x.paymentId);
      return !!p && p.amount === out.amount && p.payTo === t.to;
    });
    if (s) {
      s.used = true;
      return { ...out, explainedBy: "settlement", paymentId: s.paymentId };
    }
    const d = nearest(tx.deposits).find((x) => !x.used && x.agent === t.from && x.amount === t.amount && depositTargets.has(t.to));
    if (d) {
      d.used = true;
      return { ...out, explainedBy: "deposit", paymentId: d.paymentId };
    }
  }
  const w = nearest(tx.withdrawals).find(
    (x) => !x.used && x.agent === t.from && x.token === token.address && x.to === t.to && x.amount === t.amount,
  );
  if (w) {
    w.used = true;
    return { ...out, explainedBy: "withdrawal" };
  }
  if (token.symbol === "WETH") {
    const s = nearest(tx.swaps).find(
      (x) =>
        !x.used &&
        x.agent === t.from &&
        x.amountIn === t.amount &&
        (counterparties.has(t.to) || tx.usdcIn.some((i) => i.from === t.to && i.agent === t.from && i.amount === x.amountOut)),
    );
    if (s) {
      s.used = true;
      return { ...out, explainedBy: "swap", paymentId: s.paymentId };
    }
  }
  return out;
}

/**
 * USDC's AuthorizationUsed of the wallets: an EIP-3009 settlement of an authorised payment (its nonce is the paymentId),
 * in its epoch and strictly inside its validity, or a channel deposit landing under the collector's nonce
 * (auditSchemes.ts); anything else moved USDC under a nonce no policy authorised. Records what explains the outflows.
 */
export async function auditSettlements(
  report: AuditReport,
  usedLogs: Log[],
  byId: Map<string, AuditPayment>,
  schemes: SchemeAudit,
  explain: (txHash: string) => TxExplanations,
  checks: Checks,
): Promise<void> {
  for (const log of [...usedLogs].sort(order)) {
    const e = parseEvent("Usdc", log);
    if (e?.name !== "AuthorizationUsed") continue;
    const agent = getAddress(e.args.authorizer);
    const p = byId.get(`${agent}|${e.args.nonce}`);
    if (!p) {
      // Not a paymentId: a channel deposit landing (the collector's nonce), or USDC no authorisation explains.
      const landing = await schemes.landDeposit(agent, log);
      if (typeof landing === "string") report.inconsistencies.push(landing);
      else if (landing) explain(log.transactionHash).deposits.push(landing);
      else report.inconsistencies.push(`${agent}: USDC moved under nonce ${e.args.nonce}, which its policy never authorised`);
      continue;
    }
    if (p.scheme) report.inconsistencies.push(`${agent} ${p.paymentId}: USDC moved under the nonce of a ${p.scheme.name} payment`);
    if (p.status === "released") report.inconsistencies.push(`${p.paymentId}: settled after its release`);
    p.status = "settled";
    p.settleTx = log.transactionHash;
    explain(log.transactionHash).settlements.push({ agent, paymentId: p.paymentId, index: log.index, used: false });
    // The wallet answers only for a payment of the current epoch, and USDC only strictly inside its validity.
    const epoch = checks.epochAt(agent, log.blockNumber, log.index);
    if (epoch !== p.epoch)
      report.inconsistencies.push(`${agent} ${p.paymentId}: settled under epoch ${epoch}, authorised under ${p.epoch}`);
    const t = await checks.timestampOf(log.blockNumber);
    if (!(t > (p.validAfter ?? 0) && t < (p.validBefore ?? Infinity)))
      report.inconsistencies.push(`${agent} ${p.paymentId}: settled at ${t}, outside its validity (${p.validAfter}, ${p.validBefore})`);
  }
}

/** Every USDC and WETH Transfer out of an agent wallet, explained or reported (see auditOutflows.ts). */
export async function auditOutflows(
  report: AuditReport,
  outLogs: Log[],
  inLogs: Log[],
  explanations: Map<string, TxExplanations>,
  byId: Map<string, AuditPayment>,
  schemes: SchemeAudit,
  opts: { tokens: { usdc: string; weth: string }; counterparties: ReadonlySet<string>; depositTargets: ReadonlySet<string> },
): Promise<void> {
  const { tokens } = opts;
  for (const log of inLogs) {
    const x = explanations.get(log.transactionHash.toLowerCase());
    const t = transferOf(log);
    if (!x || x.swaps.length === 0 || !t || !report.agents[t.to]) continue;
    x.usdcIn.push({ from: t.from, agent: t.to, amount: t.amount });
  }
  for (const log of [...outLogs].sort(order)) {
    const t = transferOf(log);
    const a = t && report.agents[t.from];
    if (!t || !a) continue;
    const address = getAddress(log.address);
    const symbol = address === tokens.usdc ? "USDC" : address === tokens.weth ? "WETH" : null;
    if (!symbol) continue;
    const out = explainOutflow(
      log,
      t,
      { symbol, address },
      explanations.get(log.transactionHash.toLowerCase()),
      (agent, paymentId) => byId.get(`${agent}|${paymentId}`),
      opts.counterparties,
      opts.depositTargets,
    );
    // USDC that Permit2 pulled for the upto proxy: an open ceiling to that payee with that much left.
    if (!out.explainedBy && symbol === "USDC" && t.amount > 0n) {
      const ceiling = await schemes.ceilingFor(a.agent, t, log);
      if (ceiling) Object.assign(out, { explainedBy: "ceiling", paymentId: ceiling });
    }
    a.outflows.push(out);
    if (out.explainedBy) continue;
    const what = `${out.amount} ${symbol} (${address}) left ${a.agent} to ${out.to} in ${out.txHash}`;
    if (t.amount === 0n) report.notes.push(`${what}: moves nothing`);
    else report.inconsistencies.push(`${what}: no authorised settlement, withdrawal or swap explains it`);
  }
}
