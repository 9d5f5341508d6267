/**
 * Every USDC and WETH Transfer out of an agent wallet, held against what may explain it (DESIGN.md 4: USDC leaves a
 * wallet by an EIP-3009 transfer its policy authorised, or by the owner's Withdraw; WETH by a swap before settlement or a
 * Withdraw). An outflow nothing explains is an anomaly: it names the transaction, the token, the recipient and the
 * amount. The explanations are events of the same transaction:
 * - settlement: USDC AuthorizationUsed (authorizer the wallet, nonce a PaymentAuthorized paymentId) whose payment's
 *   amount and payTo are the transfer's;
 * - withdrawal: the wallet's Withdrawn of that token, recipient and amount;
 * - swap: the wallet's SwapExecuted whose amountIn is the WETH sent, to the pool that paid its amountOut USDC into the
 *   wallet in that transaction (or a router or pool the auditor names).
 */
import { getAddress, type Log } from "ethers";

export type OutflowExplanation = "settlement" | "withdrawal" | "swap";

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
  /** The payment a settlement or a swap was for. */
  paymentId?: string;
}

/** The events of one transaction that may explain an outflow, gathered while the agents' logs are read. */
export interface TxExplanations {
  settlements: { agent: string; paymentId: string; index: number; used: boolean }[];
  withdrawals: { agent: string; token: string; to: string; amount: bigint; index: number; used: boolean }[];
  swaps: { agent: string; paymentId: string; amountIn: bigint; amountOut: bigint; index: number; used: boolean }[];
  /** USDC Transfers into an agent wallet (a swap's pool pays its amountOut). */
  usdcIn: { from: string; agent: string; amount: bigint }[];
}

export const emptyExplanations = (): TxExplanations => ({ settlements: [], withdrawals: [], swaps: [], usdcIn: [] });

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
 * settlement, withdrawal or swap explains one transfer). `payment(agent, paymentId)` is the authorised payment's amount and
 * payTo; `counterparties` are addresses a swap may pay WETH to beyond the pool seen paying USDC back.
 */
export function explainOutflow(
  log: Log,
  t: { from: string; to: string; amount: bigint },
  token: { symbol: "USDC" | "WETH"; address: string },
  tx: TxExplanations | undefined,
  payment: (agent: string, paymentId: string) => { amount: string; payTo: string | null } | undefined,
  counterparties: ReadonlySet<string>,
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
