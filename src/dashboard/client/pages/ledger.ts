/**
 * /ledger: every payment attempt of the owner's agents, filtered by agent and status, page by page, each with its
 * scheme (exact, upto with its ceiling, channel voucher with its cumulative) and on-chain links; a chart of daily spend against the budget; the filtered ledger as CSV, built in the page.
 */
import { api } from "../api";
import type { App } from "../app";
import { toUnits, usdc } from "../amounts";
import { dailyTotals, spendChart } from "../chart";
import { download, ledgerCsv } from "../csv";
import { announce, dateTime, h, replace, shortAddress, time } from "../dom";
import type { AgentSummary, LedgerItem, LedgerPage, PolicyView } from "../types";

const STATUSES = ["approved", "pending", "blocked", "denied", "failed", "expired", "processing"];
const SIZES = [10, 20, 50, 100];
const CHART_DAYS = 14;
const MAX_EXPORT = 10_000;

interface Filters {
  agent: string;
  status: string;
  size: number;
  page: number;
}

function readFilters(): Filters {
  const q = new URLSearchParams(location.search);
  const size = Number(q.get("size"));
  const status = q.get("status") ?? "";
  return {
    agent: q.get("agent") ?? "",
    status: STATUSES.includes(status) ? status : "",
    size: SIZES.includes(size) ? size : 20,
    page: Math.max(1, Math.floor(Number(q.get("page")) || 1)),
  };
}

function query(f: Filters, extra: Record<string, string | number> = {}): string {
  const q = new URLSearchParams();
  if (f.agent) q.set("address", f.agent);
  if (f.status) q.set("status", f.status);
  for (const [k, v] of Object.entries(extra)) q.set(k, String(v));
  return q.toString();
}

export async function ledgerPage(app: App, root: HTMLElement): Promise<void> {
  if (!app.session()) {
    app.signInPrompt(root, "your ledger");
    return;
  }
  const filters = readFilters();
  const [{ agents }, { agents: policies }] = await Promise.all([
    api<{ agents: AgentSummary[] }>("GET", "/wallet/agents", { auth: "required" }),
    api<{ agents: PolicyView[] }>("GET", "/limits", { auth: "required" }),
  ]);
  if (filters.agent && !agents.some((a) => a.address.toLowerCase() === filters.agent.toLowerCase())) filters.agent = "";
  const labels = new Map(agents.map((a) => [a.address, a.label]));

  const agentSelect = h(
    "select",
    { id: "filter-agent", name: "agent" },
    h("option", { value: "" }, "All agents"),
    agents.map((a) => h("option", { value: a.address }, `${a.label} (${shortAddress(a.address)})`)),
  );
  const statusSelect = h(
    "select",
    { id: "filter-status", name: "status" },
    h("option", { value: "" }, "All statuses"),
    STATUSES.map((s) => h("option", { value: s }, s)),
  );
  const sizeSelect = h(
    "select",
    { id: "filter-size", name: "size" },
    SIZES.map((n) => h("option", { value: String(n) }, String(n))),
  );
  agentSelect.value = filters.agent;
  statusSelect.value = filters.status;
  sizeSelect.value = String(filters.size);

  const form = h(
    "form",
    { id: "ledger-filters", class: "filters", role: "search", "aria-label": "Filter the ledger" },
    h("div", { class: "field" }, h("label", { for: "filter-agent" }, "Agent"), agentSelect),
    h("div", { class: "field" }, h("label", { for: "filter-status" }, "Status"), statusSelect),
    h("div", { class: "field" }, h("label", { for: "filter-size" }, "Entries per page"), sizeSelect),
    h("button", { type: "submit", id: "filter-apply" }, "Apply filters"),
  );
  const tableWrap = h("div", { id: "ledger-entries", class: "table-scroll" });
  const pager = h("nav", { "aria-label": "Ledger pages", class: "pager" });
  const exportButton = h("button", { type: "button", id: "export-csv" }, "Download CSV");
  const chartWrap = h("div", { id: "chart" }, h("p", { class: "loading" }, "Adding up daily spend…"));

  replace(
    root,
    h(
      "section",
      { class: "card", "aria-labelledby": "entries-title" },
      h("h2", { id: "entries-title" }, "Payments"),
      form,
      tableWrap,
      pager,
      h("div", { class: "actions" }, exportButton),
    ),
    h(
      "section",
      { class: "card", "aria-labelledby": "chart-section-title" },
      h("h2", { id: "chart-section-title" }, "Daily spend against the budget"),
      chartWrap,
    ),
  );

  const load = async (focusTable = false) => {
    history.replaceState(
      null,
      "",
      `/ledger?${new URLSearchParams({ ...(filters.agent ? { agent: filters.agent } : {}), ...(filters.status ? { status: filters.status } : {}), size: String(filters.size), page: String(filters.page) })}`,
    );
    replace(tableWrap, h("p", { class: "loading" }, "Loading entries…"));
    try {
      const res = await api<LedgerPage>(
        "GET",
        `/ledger?${query(filters, { limit: filters.size, offset: (filters.page - 1) * filters.size })}`,
        { auth: "required" },
      );
      renderTable(res);
      renderPager(res);
      if (focusTable) announce(`Showing ${res.transactions.length} of ${res.total} entries.`);
    } catch (err) {
      app.report(err, "load the ledger");
      replace(tableWrap, h("p", null, "The ledger could not be loaded. See the message above."));
    }
  };

  const renderTable = (res: LedgerPage) => {
    if (!res.transactions.length) {
      replace(tableWrap, h("p", { id: "ledger-empty" }, res.total ? "No entries on this page." : "No payments match these filters."));
      return;
    }
    replace(
      tableWrap,
      h(
        "table",
        { id: "ledger-table", class: "cards" },
        h("caption", null, "Payment attempts, newest first"),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["Date", "Agent", "Merchant", "Intent", "Amount", "Scheme", "Status", "On-chain"].map((c) => h("th", { scope: "col" }, c)),
          ),
        ),
        h(
          "tbody",
          null,
          res.transactions.map((t) => entryRow(app, t, labels)),
        ),
      ),
    );
  };

  const renderPager = (res: LedgerPage) => {
    const pages = Math.max(1, Math.ceil(res.total / res.limit));
    const first = res.total ? res.offset + 1 : 0;
    const last = res.offset + res.transactions.length;
    const go = (page: number) => {
      filters.page = page;
      void load(true);
    };
    replace(
      pager,
      h("button", { type: "button", id: "page-prev", disabled: filters.page <= 1, onclick: () => go(filters.page - 1) }, "Previous page"),
      h(
        "span",
        { id: "page-info", "aria-live": "polite" },
        ` Page ${filters.page} of ${pages} · entries ${first}–${last} of ${res.total} `,
      ),
      h("button", { type: "button", id: "page-next", disabled: filters.page >= pages, onclick: () => go(filters.page + 1) }, "Next page"),
    );
  };

  /** Every entry matching the filters (pages of 200), for the CSV and the chart. */
  const fetchAll = async (f: Pick<Filters, "agent" | "status">, stopBefore?: string): Promise<LedgerItem[]> => {
    const out: LedgerItem[] = [];
    for (let offset = 0; offset < MAX_EXPORT; offset += 200) {
      const res = await api<LedgerPage>("GET", `/ledger?${query({ ...filters, ...f }, { limit: 200, offset })}`, { auth: "required" });
      out.push(...res.transactions);
      const oldest = res.transactions[res.transactions.length - 1];
      if (res.transactions.length < 200 || out.length >= res.total || (stopBefore && oldest && oldest.createdAt < stopBefore)) break;
    }
    return out;
  };

  const loadChart = async () => {
    try {
      const since = new Date(Date.now() - CHART_DAYS * 86_400_000).toISOString();
      const approved = await fetchAll({ agent: filters.agent, status: "approved" }, since);
      const totals = dailyTotals(
        approved.map((t) => ({ at: t.settledAt ?? t.createdAt, units: toUnits(t.amount) ?? 0n })),
        CHART_DAYS,
      );
      const inScope = policies.filter((p) => p.deployed && (!filters.agent || p.address === filters.agent));
      const budget = inScope.reduce((sum, p) => sum + (toUnits(p.dailyBudget) ?? 0n), 0n);
      const who = filters.agent ? (labels.get(filters.agent) ?? filters.agent) : "all your agents";
      replace(chartWrap, spendChart(totals, budget, `Daily spend of ${who}, last ${CHART_DAYS} days (UTC)`));
    } catch (err) {
      app.report(err, "add up daily spend");
      replace(chartWrap, h("p", null, "The chart could not be drawn. See the message above."));
    }
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    filters.agent = agentSelect.value;
    filters.status = statusSelect.value;
    filters.size = Number(sizeSelect.value);
    filters.page = 1;
    void load(true);
    void loadChart();
  });

  exportButton.addEventListener("click", async () => {
    app.clearAlerts();
    exportButton.disabled = true;
    exportButton.textContent = "Preparing the CSV…";
    try {
      const rows = await fetchAll({ agent: filters.agent, status: filters.status });
      const name = `spendgate-ledger${filters.agent ? `-${filters.agent.slice(0, 10)}` : ""}${filters.status ? `-${filters.status}` : ""}-${new Date().toISOString().slice(0, 10)}.csv`;
      download(name, ledgerCsv(rows));
      announce(`Downloaded ${rows.length} entries as ${name}.`);
    } catch (err) {
      app.report(err, "export the ledger");
    } finally {
      exportButton.disabled = false;
      exportButton.textContent = "Download CSV";
    }
  });

  await Promise.all([load(), loadChart()]);
}

function entryRow(app: App, t: LedgerItem, labels: Map<string, string>): HTMLTableRowElement {
  const onchain: (Node | string)[] = [];
  if (t.txHash)
    onchain.push(app.txLink(t.txHash, t.status === "blocked" ? "PaymentBlocked transaction" : "Settlement transaction", t.network));
  else if (t.scheme === "batch-settlement" && t.status === "approved")
    // A voucher moves nothing on-chain: the seller claims the channel's vouchers later, in one transaction.
    onchain.push(h("span", { class: "muted", "data-field": "voucher" }, "off-chain voucher (the seller claims it later)"));
  else onchain.push(h("span", { class: "muted" }, "no transaction"));
  if (t.txHash)
    onchain.push(
      h("br"),
      h(
        "span",
        { class: "muted small" },
        t.onchain?.confirmed
          ? `confirmed${t.onchain.blockNumber !== null ? ` in block ${t.onchain.blockNumber}` : ""}`
          : "awaiting confirmation",
      ),
    );
  if (t.swap) {
    onchain.push(
      h("br"),
      h(
        "span",
        { class: "small", "data-field": "swap" },
        `Swapped ${t.swap.amountIn} ${t.swap.tokenIn} for ${usdc(t.swap.amountOut)} first: `,
        app.txLink(t.swap.txHash, "Swap transaction", t.network),
      ),
    );
  }
  return h(
    "tr",
    { "data-id": t.id, "data-status": t.status },
    h("td", null, time(t.createdAt, dateTime(t.createdAt)), h("span", { class: "muted small mono txn" }, t.id)),
    h("td", { "data-label": "Agent" }, labels.get(t.agentAddress) ?? shortAddress(t.agentAddress)),
    h("td", { "data-label": "Merchant" }, t.merchant),
    h("td", { class: "intent", "data-label": "Intent" }, t.intent),
    amountCell(t),
    schemeCell(t),
    h(
      "td",
      { "data-label": "Status" },
      h("span", { class: `badge status-${t.status}`, "data-field": "status" }, t.status),
      t.reason ? [h("br"), h("span", { class: "muted small" }, t.reason)] : null,
    ),
    h("td", { "data-label": "On-chain" }, onchain),
  );
}

/** A refusal's amount says what it is: the seller's price, or the agent's maxAmount when no price was known. */
function amountCell(t: LedgerItem): HTMLTableCellElement {
  const what =
    t.amountIs === "maxAmount" ? "the agent's maxAmount (no price from the seller)" : t.status === "blocked" ? "the seller's price" : null;
  return h(
    "td",
    { class: "num", "data-label": "Amount" },
    h("span", { "data-field": "amount" }, usdc(t.amount), what ? [" ", h("span", { class: "muted small amount-is" }, what)] : null),
  );
}

/** How the entry was paid: exact (one transfer), upto (settled of a signed ceiling) or a channel voucher. */
function schemeCell(t: LedgerItem): HTMLTableCellElement {
  const scheme = t.scheme ?? "exact";
  const detail: string[] = [];
  if (scheme === "upto" && t.ceiling) {
    detail.push(t.status === "approved" ? `settled ${usdc(t.amount)} of ceiling ${usdc(t.ceiling)}` : `ceiling ${usdc(t.ceiling)}`);
  }
  if (scheme === "batch-settlement" && t.channel) {
    detail.push(`cumulative ${usdc(t.channel.cumulative)} in channel ${t.channel.channelId.slice(0, 10)}…`);
    if (t.channel.deposit !== null) detail.push(`deposited ${usdc(t.channel.deposit)} first`);
  }
  return h(
    "td",
    { "data-scheme": scheme, "data-label": "Scheme" },
    h("span", { class: "badge", "data-field": "scheme" }, scheme === "batch-settlement" ? "channel" : scheme),
    detail.length ? [h("br"), h("span", { class: "muted small", "data-field": "scheme-detail" }, detail.join("; "))] : null,
  );
}
