/**
 * The sandbox explorer's pages (/dev/explorer/tx/:hash and /address/:address, embedded mode only), rendered here as
 * static HTML with the dashboard's stylesheet and no script: a transaction with its decoded SpendGate, USDC and WETH
 * events, an address with its balances. Every value comes from the chain (merchants and intents from agents among
 * them) and is escaped; addresses link to their own page on the same chain.
 */
import type { ExplorerAddress, ExplorerTx } from "../schemas/explorer";
import { FAVICON, escape } from "./pages";

/** No script at all; styles from this origin (the dashboard's stylesheet). */
export const EXPLORER_CSP = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** SpendGate's own contracts: their events are the auditor's interface. */
const SPENDGATE = new Set(["SpendPolicy", "SpendPolicyFactory", "OperatorSet"]);
/** Arguments in USDC base units (6 decimals), in SpendGate's and USDC's events (a Withdrawn's amount may be ETH). */
const USDC_ARGS = new Set([
  "amount",
  "spentToday",
  "approvedAmount",
  "amountOut",
  "value",
  "perTxLimit",
  "dailyBudget",
  "approvalThreshold",
  "hourlyBudget",
  "weeklyBudget",
  "monthlyBudget",
  "lifetimeBudget",
  "dailyCap",
]);

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** "1.5 USDC" from "1500000". */
function usdcOf(units: string): string {
  const n = BigInt(units);
  const frac = (n % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${n / 1_000_000n}${frac ? `.${frac}` : ""} USDC`;
}

/** One decoded value: addresses linked, integers with their USDC value where the argument is one, structs and lists nested. */
function value(v: unknown, name: string, usdc: boolean, network: string): string {
  if (Array.isArray(v)) return v.length ? `<ol>${v.map((x) => `<li>${value(x, name, usdc, network)}</li>`).join("")}</ol>` : "(none)";
  if (v && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>);
    return entries.length ? facts(entries, usdc, network) : "(none)";
  }
  const text = String(v);
  if (ADDRESS.test(text)) return addressLink(text, network);
  if (usdc && USDC_ARGS.has(name) && /^\d+$/.test(text))
    return `<span class="mono">${escape(text)}</span> <span class="muted">(${escape(usdcOf(text))})</span>`;
  return /^0x[0-9a-fA-F]*$/.test(text) ? `<code class="address">${escape(text)}</code>` : escape(text);
}

function facts(entries: [string, unknown][], usdc: boolean, network: string): string {
  return `<dl class="facts">${entries.map(([k, v]) => `<dt>${escape(k)}</dt><dd>${value(v, k, usdc, network)}</dd>`).join("")}</dl>`;
}

const addressLink = (address: string, network: string) =>
  `<a class="mono" href="/dev/explorer/address/${escape(address)}?network=${encodeURIComponent(network)}">${escape(address)}</a>`;

function shell(title: string, style: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · SpendGate sandbox explorer</title>
<link rel="icon" href="${FAVICON}">
<link rel="stylesheet" href="${escape(style)}">
</head>
<body>
<header class="site-header"><a class="brand" href="/">SpendGate</a><span class="badge warn">Sandbox explorer</span></header>
<main id="main">
${body}
</main>
</body>
</html>
`;
}

export function renderExplorerTx(tx: ExplorerTx, style: string): string {
  const events = tx.events.map((e, i) => {
    const decoded = e.name !== null;
    const usdc = e.contract === "USDC" || (e.contract !== null && SPENDGATE.has(e.contract) && e.name !== "Withdrawn");
    return `<article class="event${e.contract && SPENDGATE.has(e.contract) ? " spendgate" : ""}" data-event="${escape(e.name ?? "")}">
<h3>${i + 1}. ${decoded ? escape(e.name ?? "") : "An event not decoded"} <span class="muted small">${escape(e.contract ?? "unknown contract")} at ${addressLink(e.address, tx.network)}</span></h3>
${facts(Object.entries(e.args), usdc, tx.network)}
</article>`;
  });
  return shell(
    `Transaction ${tx.hash.slice(0, 10)}…`,
    style,
    `<h1>Transaction</h1>
<p class="notice" data-kind="warning">${escape(tx.note)}</p>
<section class="card" aria-labelledby="tx-title">
<h2 id="tx-title"><code class="address">${escape(tx.hash)}</code></h2>
${facts(
  [
    ["Network (sandbox)", tx.network],
    ["Status", tx.status],
    ["Block", tx.blockNumber],
    ["Time", tx.timestamp ?? "unknown"],
    ["From", tx.from],
    ["To", tx.to ?? "(a contract creation)"],
    ["Gas used", tx.gasUsed],
  ],
  false,
  tx.network,
)}
</section>
<section class="card" aria-labelledby="events-title" id="events">
<h2 id="events-title">Events (${tx.events.length})</h2>
${events.length ? events.join("\n") : "<p>This transaction emitted no event.</p>"}
</section>`,
  );
}

export function renderExplorerAddress(a: ExplorerAddress, style: string): string {
  return shell(
    `Address ${a.address.slice(0, 10)}…`,
    style,
    `<h1>Address</h1>
<p class="notice" data-kind="warning">${escape(a.note)}</p>
<section class="card" aria-labelledby="address-title">
<h2 id="address-title"><code class="address">${escape(a.address)}</code></h2>
${facts(
  [
    ["Network (sandbox)", a.network],
    ["Kind", a.contract ? "a contract (an agent's wallet and policy, or another contract)" : "an account (no code)"],
    ["USDC", `${a.usdc} USDC`],
    ["ETH", `${a.eth} ETH`],
  ],
  false,
  a.network,
)}
</section>`,
  );
}

export function renderExplorerMissing(message: string, style: string): string {
  return shell("Not found", style, `<h1>Not found</h1>\n<section class="card"><p>${escape(message)}</p></section>`);
}
