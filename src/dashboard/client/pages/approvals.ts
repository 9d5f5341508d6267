/**
 * /approvals: payments above an agent's threshold, waiting for the owner. Polled every few seconds (new requests
 * appear without a reload; rows are updated in place so focus stays where it is). Approve and deny are
 * ApprovalDecision signatures in the policy domain of the agent's SpendPolicy.
 */
import { api } from "../api";
import type { App } from "../app";
import { toUnits, usdc } from "../amounts";
import { age, announce, dateTime, h, replace, shortAddress, time, until } from "../dom";
import { admittingEntry } from "../../../policy/allowlist";
import { approvalDecisionData, nowSeconds } from "../typed";
import type { AgentSummary, ApprovalItem, LedgerPage, PolicyView } from "../types";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/** How the payee of a request compares with the payee the owner pinned for the merchant's allowlist entry. */
export function payeeStanding(
  item: Pick<ApprovalItem, "merchant" | "payTo">,
  policy: PolicyView | undefined,
): { kind: "matches" | "new" | "differs" | "none"; entry: string | null; pinned: string | null; text: string } {
  const entry = policy ? admittingEntry(policy.allowlist, item.merchant) : null;
  const pinned = entry ? (policy?.payees?.[entry] ?? null) : null;
  if (!item.payTo) return { kind: "none", entry, pinned, text: "The request names no payee." };
  if (pinned && pinned.toLowerCase() === item.payTo.toLowerCase()) {
    return { kind: "matches", entry, pinned, text: `matches the pinned payee of ${entry}` };
  }
  if (pinned) {
    return {
      kind: "differs",
      entry,
      pinned,
      text: `differs from the pinned payee ${pinned} of ${entry}: the contract refuses this payment (payee_not_allowed); deny it`,
    };
  }
  return {
    kind: "new",
    entry,
    pinned,
    text: `new payee: ${entry ?? item.merchant} pays any address (no payee pinned); approve only if you know this address`,
  };
}

const POLL_MS = 3_000;

export async function approvalsPage(app: App, root: HTMLElement): Promise<void> {
  if (!app.session()) {
    app.signInPrompt(root, "the payments waiting for you");
    return;
  }
  const agents = new Map<string, AgentSummary>();
  const policies = new Map<string, PolicyView>();
  const rows = new Map<string, { row: HTMLTableRowElement; item: ApprovalItem }>();
  const busy = new Set<string>();

  const tbody = h("tbody");
  const empty = h("p", { id: "approvals-empty" }, "No payments are waiting for you.");
  const table = h(
    "table",
    // On a phone each request is a card (styles.css, table.cards), its decision at the bottom within the thumb's reach.
    { id: "approvals-table", class: "cards", hidden: true },
    h("caption", null, "Payments above an agent's approval threshold. Approving pays the seller; denying closes the request."),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Payment", "Payee (signed)", "Agent", "Requested", "Decision"].map((c) => h("th", { scope: "col" }, c)),
      ),
    ),
    tbody,
  );
  const updated = h("p", { class: "hint", id: "approvals-updated" }, "Checking for new requests…");
  const decided = h("ol", { id: "decided", class: "plain" });
  const loadDecided = async () => {
    // The ledger remembers decisions across visits: entries that came from an approval and are no longer pending.
    const res = await api<LedgerPage>("GET", "/ledger?limit=50", { auth: "required" });
    const items = res.transactions
      .flatMap((t) => (t.approvalId && t.status !== "pending" ? [{ ...t, approvalId: t.approvalId }] : []))
      .slice(0, 10);
    replace(
      decided,
      items.length
        ? items.map((t) =>
            h(
              "li",
              { "data-approval": t.approvalId, "data-status": t.status },
              h("span", { class: `badge status-${t.status}` }, t.status),
              ` ${usdc(t.amount)} to ${t.merchant} for “${t.intent}”, ${age(t.createdAt)} `,
              t.txHash ? app.txLink(t.txHash, undefined, t.network) : null,
            ),
          )
        : h("li", { class: "muted" }, "Nothing decided yet."),
    );
  };
  replace(
    root,
    h(
      "section",
      { class: "card", "aria-labelledby": "pending-title" },
      h("h2", { id: "pending-title" }, "Waiting for you"),
      updated,
      empty,
      table,
    ),
    h("section", { class: "card", "aria-labelledby": "decided-title" }, h("h2", { id: "decided-title" }, "Recently decided"), decided),
  );

  // The agents and their policies (allowlist and pinned payees, to say how each request's payee compares).
  const loadAgents = async () => {
    const [res, limits] = await Promise.all([
      api<{ agents: AgentSummary[] }>("GET", "/wallet/agents", { auth: "required" }),
      api<{ agents: PolicyView[] }>("GET", "/limits", { auth: "required" }),
    ]);
    for (const a of res.agents) agents.set(a.address, a);
    for (const p of limits.agents) policies.set(p.address, p);
  };

  const agentCell = (address: string) => {
    const a = agents.get(address);
    return h(
      "td",
      { "data-label": "Agent" },
      a ? a.label : shortAddress(address),
      h("br"),
      h("span", { class: "muted mono", title: address }, shortAddress(address)),
    );
  };

  const decide = async (item: ApprovalItem, action: "approve" | "deny", button: HTMLButtonElement) => {
    if (busy.has(item.id)) return;
    app.clearAlerts();
    busy.add(item.id);
    const buttons = rows.get(item.id)?.row.querySelectorAll("button");
    buttons?.forEach((b) => (b.disabled = true));
    const label = button.textContent;
    button.textContent = "Waiting for your wallet…";
    try {
      const agent = agents.get(item.agentAddress);
      if (!agent) throw new Error(`agent ${item.agentAddress} is not among your agents`);
      const amount = toUnits(item.amount);
      if (amount === null) throw new Error(`approval ${item.id} has an amount that is not a USDC amount: ${item.amount}`);
      // Signed for the agent's chain, where the payment is made.
      const { wallet, owner } = await app.signer(agent.network);
      const timestamp = nowSeconds();
      const data = approvalDecisionData(
        agent.chainId,
        agent.policyContract,
        { action, approvalId: item.id, agent: item.agentAddress, merchant: item.merchant, payTo: item.payTo ?? ZERO_ADDRESS, amount },
        timestamp,
      );
      const humanSignature = await wallet.signTypedData(owner, data);
      button.textContent = action === "approve" ? "Paying…" : "Denying…";
      const res = await api<{ txHash?: string; status: string }>("POST", `/approvals/${item.id}/${action}`, {
        auth: "required",
        body: { humanSignature, timestamp },
      });
      rows.get(item.id)?.row.remove();
      rows.delete(item.id);
      const text =
        action === "approve"
          ? `Approved: ${usdc(item.amount)} paid to ${item.merchant} for “${item.intent}”. `
          : `Denied: ${usdc(item.amount)} to ${item.merchant} for “${item.intent}”. Nothing was paid.`;
      await loadDecided().catch(() => undefined);
      app.notify(text, ...(action === "approve" ? [app.txLink(res.txHash, undefined, agent.network)] : []));
      syncEmpty();
      // Keep keyboard users in the table: the next decision, or the heading when none is left.
      (tbody.querySelector<HTMLButtonElement>("button") ?? document.getElementById("pending-title"))?.focus();
    } catch (err) {
      app.report(err, action === "approve" ? "approve the payment" : "deny the payment");
      buttons?.forEach((b) => (b.disabled = false));
      button.textContent = label;
    } finally {
      busy.delete(item.id);
    }
  };

  // The payee the owner's signature binds, shown before she signs, with how it compares with her pinned payee.
  const payeeCell = (item: ApprovalItem) => {
    const standing = payeeStanding(item, policies.get(item.agentAddress));
    return h(
      "td",
      { "data-field": "payee", "data-payee": standing.kind, "data-label": "Payee (signed)" },
      item.payTo ? h("code", { class: "mono address", title: item.payTo }, item.payTo) : null,
      h("span", { class: standing.kind === "matches" ? "muted small" : "warn small" }, standing.text),
    );
  };

  const makeRow = (item: ApprovalItem): HTMLTableRowElement => {
    const what = `${usdc(item.amount)} to ${item.merchant}`;
    return h(
      "tr",
      { "data-approval": item.id },
      h(
        "td",
        { class: "payment" },
        h("strong", { class: "amount" }, usdc(item.amount)),
        " to ",
        h("strong", null, item.merchant),
        h("span", { class: "intent" }, item.intent),
        h("span", { class: "muted small url" }, item.serviceUrl),
      ),
      payeeCell(item),
      agentCell(item.agentAddress),
      h(
        "td",
        { "data-label": "Requested" },
        h("span", { class: "muted", "data-field": "age" }, age(item.requestedAt)),
        ", ",
        h("span", { class: "muted", "data-field": "expires" }, `expires ${until(item.expiresAt)}`),
        h("span", { class: "small when" }, time(item.requestedAt, dateTime(item.requestedAt))),
      ),
      h(
        "td",
        { class: "decision" },
        h(
          "button",
          {
            type: "button",
            class: "primary",
            "data-action": "approve",
            "aria-label": `Approve ${what}`,
            onclick: (e: Event) => decide(item, "approve", e.currentTarget as HTMLButtonElement),
          },
          "Approve",
        ),
        " ",
        h(
          "button",
          {
            type: "button",
            class: "danger",
            "data-action": "deny",
            "aria-label": `Deny ${what}`,
            onclick: (e: Event) => decide(item, "deny", e.currentTarget as HTMLButtonElement),
          },
          "Deny",
        ),
      ),
    );
  };

  const syncEmpty = () => {
    table.hidden = rows.size === 0;
    empty.hidden = rows.size > 0;
  };

  let stopped = false;
  let failing = false;
  let timer: number | undefined;
  const poll = async () => {
    try {
      const { approvals } = await api<{ approvals: ApprovalItem[] }>("GET", "/approvals", { auth: "required" });
      // New requests: read the agents and their pinned payees again (a policy may have changed since).
      if (approvals.some((a) => !rows.has(a.id))) await loadAgents();
      const ids = new Set(approvals.map((a) => a.id));
      for (const [id, r] of rows) {
        if (!ids.has(id) && !busy.has(id)) {
          r.row.remove();
          rows.delete(id);
        }
      }
      let added = 0;
      for (const item of approvals) {
        const existing = rows.get(item.id);
        if (existing) {
          for (const [field, text] of [
            ["age", age(item.requestedAt)],
            ["expires", `expires ${until(item.expiresAt)}`],
          ]) {
            const cell = existing.row.querySelector(`[data-field="${field}"]`);
            if (cell) cell.textContent = text;
          }
          continue;
        }
        const row = makeRow(item);
        rows.set(item.id, { row, item });
        tbody.appendChild(row); // oldest first, as the API lists them
        added++;
      }
      syncEmpty();
      if (added)
        announce(added === 1 ? "A new payment is waiting for your approval." : `${added} new payments are waiting for your approval.`);
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}; checks every ${POLL_MS / 1000} s.`;
      failing = false;
    } catch (err) {
      // Said once, not every few seconds; the polling goes on and recovers by itself.
      if (!failing) {
        const problem = app.report(err, "see the payments waiting for you");
        if (problem.kind === "signed-out") stopped = true; // nothing to poll until the owner signs in again
      }
      failing = true;
      updated.textContent = "Could not check for new requests; see the message above. Retrying.";
    }
    if (!stopped) timer = window.setTimeout(poll, POLL_MS);
  };

  await loadAgents();
  await Promise.all([poll(), loadDecided().catch((err: unknown) => app.report(err, "see recent decisions"))]);
  window.addEventListener("pagehide", () => {
    stopped = true;
    clearTimeout(timer);
  });
}
