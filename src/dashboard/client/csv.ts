/** The ledger as CSV, built in the page. Cells that a spreadsheet would run as a formula are defused. */
import type { LedgerItem } from "./types";

const COLUMNS: [string, (t: LedgerItem) => string | number | boolean | null][] = [
  ["id", (t) => t.id],
  ["createdAt", (t) => t.createdAt],
  ["settledAt", (t) => t.settledAt],
  ["agentAddress", (t) => t.agentAddress],
  ["merchant", (t) => t.merchant],
  ["serviceUrl", (t) => t.serviceUrl],
  ["intent", (t) => t.intent],
  ["amount", (t) => t.amount],
  // "maxAmount": a refusal before any price was known records the agent's ceiling, not a price (GET /ledger says so too).
  ["amountIs", (t) => t.amountIs ?? "price"],
  ["currency", (t) => t.currency],
  ["status", (t) => t.status],
  ["reason", (t) => t.reason],
  ["txHash", (t) => t.txHash],
  ["explorerUrl", (t) => t.explorerUrl],
  ["approvalId", (t) => t.approvalId],
  ["paymentId", (t) => t.paymentId],
  ["confirmed", (t) => t.onchain?.confirmed ?? false],
  ["blockNumber", (t) => t.onchain?.blockNumber ?? null],
  ["swapTxHash", (t) => t.swap?.txHash ?? null],
  ["swapTokenIn", (t) => t.swap?.tokenIn ?? null],
  ["swapAmountIn", (t) => t.swap?.amountIn ?? null],
  ["swapAmountOut", (t) => t.swap?.amountOut ?? null],
  ["scheme", (t) => t.scheme ?? "exact"],
  ["ceiling", (t) => t.ceiling ?? null],
  ["channelId", (t) => t.channel?.channelId ?? null],
  ["channelCumulative", (t) => t.channel?.cumulative ?? null],
  ["channelDeposit", (t) => t.channel?.deposit ?? null],
];

export function csvCell(value: string | number | boolean | null): string {
  if (value === null || value === undefined) return "";
  let s = String(value);
  // A leading = + - @ (or tab/CR) would be a formula in a spreadsheet: agents write intents, so defuse them.
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function ledgerCsv(rows: LedgerItem[]): string {
  const lines = [COLUMNS.map(([name]) => name).join(",")];
  for (const r of rows) lines.push(COLUMNS.map(([, get]) => csvCell(get(r))).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** Offers a text as a file download (no server round trip). */
export function download(filename: string, text: string, type = "text/csv;charset=utf-8"): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
