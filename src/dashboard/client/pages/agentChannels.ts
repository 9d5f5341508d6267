/**
 * An agent's batch-settlement channels, on its card in /agents (docs/schemes.md): what each channel was given
 * (deposited), what the seller's vouchers charged (spent), what it still holds beyond that (held: refundable, counted
 * in the budgets until it comes back) and what the seller claimed. "Close channel (refund)" asks the seller for its
 * cooperative refund (POST /agents/:address/channels/:channelId/close): the USDC goes back to the agent's wallet and
 * nowhere else, and the wallet credits it back to the budget windows it was taken from. The owner signs nothing:
 * money can only come back this way.
 */
import { api } from "../api";
import type { App } from "../app";
import { usdc } from "../amounts";
import { h } from "../dom";
import type { AgentSummary, ChannelView, ClosedChannel } from "../types";

/** The agent's channels (newest first), or null when they could not be read. */
export async function loadChannels(a: AgentSummary): Promise<ChannelView[] | null> {
  try {
    const res = await api<{ channels: ChannelView[] }>("GET", `/agents/${a.address}/channels`, { auth: "required" });
    return res.channels;
  } catch {
    return null;
  }
}

/** "Held in channels" beside the spend meter (GET /limits heldInChannels). */
export function heldLine(a: AgentSummary, held: string | undefined): HTMLElement | null {
  if (held === undefined) return null;
  return h(
    "p",
    { class: "held", id: `held-${a.address}` },
    h("strong", null, "Held in channels: "),
    h("span", { "data-field": "held-in-channels" }, usdc(held)),
    h(
      "span",
      { class: "muted small" },
      " (deposited with sellers, not yet charged: counted in the budgets until a channel is closed and refunded)",
    ),
  );
}

export function channelsSection(app: App, a: AgentSummary, channels: ChannelView[] | null, reload: () => Promise<void>): HTMLElement {
  const titleId = `channels-${a.address}-title`;
  const section = h(
    "section",
    { class: "channels", "data-channels": a.address, "aria-labelledby": titleId },
    h("h3", { id: titleId }, "Channels"),
  );
  if (channels === null) {
    section.append(h("p", { class: "warn", "data-field": "channels-error" }, "The channels could not be loaded. Reload to try again."));
    return section;
  }
  if (!channels.length) {
    section.append(
      h(
        "p",
        { class: "muted", "data-field": "no-channels" },
        "No payment channels. One opens when the agent pays a batch-settlement seller.",
      ),
    );
    return section;
  }
  section.append(
    h(
      "div",
      { class: "table-scroll", role: "region", tabindex: 0, "aria-labelledby": titleId },
      h(
        "table",
        { class: "channels-table cards" },
        h("caption", null, `Payment channels of ${a.label}: deposits held by sellers, spent by vouchers`),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["Merchant", "Status", "Deposited", "Spent", "Held (refundable)", "Claimed by the seller", "Action"].map((c) =>
              h("th", { scope: "col" }, c),
            ),
          ),
        ),
        h(
          "tbody",
          null,
          channels.map((c) => channelRow(app, a, c, reload)),
        ),
      ),
    ),
    h(
      "p",
      { class: "hint" },
      "Closing a channel asks the seller to refund what its vouchers did not charge. The refund goes to the agent's wallet only, and is credited back to the budgets it was counted in; you sign nothing.",
    ),
  );
  return section;
}

function channelRow(app: App, a: AgentSummary, c: ChannelView, reload: () => Promise<void>): HTMLTableRowElement {
  const open = c.status === "open";
  return h(
    "tr",
    { "data-channel": c.channelId, "data-status": c.status },
    h("td", null, c.merchant, h("br"), h("span", { class: "muted small mono", title: c.channelId }, `${c.channelId.slice(0, 10)}…`)),
    h("td", { "data-label": "Status" }, h("span", { class: open ? "badge ok" : "badge", "data-field": "status" }, c.status)),
    h("td", { class: "num", "data-field": "deposited", "data-label": "Deposited" }, usdc(c.deposited)),
    h("td", { class: "num", "data-field": "charged", "data-label": "Spent" }, usdc(c.charged)),
    h("td", { class: "num", "data-field": "held", "data-label": "Held (refundable)" }, usdc(c.held)),
    h(
      "td",
      { class: "num", "data-field": "claimed", "data-label": "Claimed by the seller" },
      c.claimed === null ? "unknown (chain not reachable)" : usdc(c.claimed),
    ),
    h(
      "td",
      { class: "decision" },
      open
        ? h(
            "button",
            {
              type: "button",
              class: "danger",
              "data-action": "close-channel",
              onclick: (e: Event) => closeChannel(app, a, c, e.currentTarget as HTMLButtonElement, reload),
            },
            "Close channel (refund)",
            h("span", { class: "visually-hidden" }, ` with ${c.merchant}`),
          )
        : h("span", { class: "muted small" }, "closed"),
    ),
  );
}

async function closeChannel(
  app: App,
  a: AgentSummary,
  c: ChannelView,
  button: HTMLButtonElement,
  reload: () => Promise<void>,
): Promise<void> {
  app.clearAlerts();
  const label = Array.from(button.childNodes);
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  button.textContent = "Closing: asking the seller for the refund…";
  try {
    const res = await api<ClosedChannel>("POST", `/agents/${a.address}/channels/${c.channelId}/close`, { auth: "required" });
    await reload();
    const refund = res.refunds.at(-1);
    const left = res.status === "open" ? ` The channel still holds ${usdc(res.held)}.` : "";
    app.notify(
      `Closed the channel of ${a.label} with ${c.merchant}: ${usdc(res.refunded)} refunded to the wallet, ${usdc(res.creditedNow)} credited back to the budgets.${left} `,
      refund?.txHash && res.refunded !== "0" ? app.txLink(refund.txHash, "Refund transaction", a.network) : "",
    );
  } catch (err) {
    app.report(err, "close the channel");
    button.disabled = false;
    button.removeAttribute("aria-busy");
    button.replaceChildren(...label);
  }
}
