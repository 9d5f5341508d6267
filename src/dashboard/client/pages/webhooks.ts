/**
 * /webhooks: the owner's alert endpoints. Add one (its signing secret is shown here once), list them, send a test
 * event, disable one, and read an endpoint's deliveries with every attempt, page by page.
 */
import { api } from "../api";
import type { App } from "../app";
import { announce, dateTime, h, replace, time } from "../dom";
import type { WebhookDeliveriesPage, WebhookDelivery, WebhookEndpoint } from "../types";

const EVENTS: [string, string][] = [
  ["approval.requested", "a payment waits for your approval"],
  ["approval.expired", "nobody decided an approval in time"],
  ["payment.approved", "a payment settled"],
  ["payment.blocked", "the policy refused a payment"],
  ["payment.failed", "a payment did not settle (budget released)"],
  ["payment.receipt_invalid", "a paid seller's receipt failed verification"],
  ["budget.threshold", "80% and 100% of a budget window spent"],
  ["policy.updated", "a new policy is on-chain"],
  ["agent.paused", "an agent was paused"],
];
const PAGE_SIZE = 20;

export async function webhooksPage(app: App, root: HTMLElement): Promise<void> {
  if (!app.session()) {
    app.signInPrompt(root, "your webhooks");
    return;
  }
  let selected: WebhookEndpoint | null = null;
  let page = 1;

  const url = h("input", {
    id: "webhook-url",
    name: "url",
    type: "url",
    required: true,
    maxlength: "2048",
    placeholder: "https://hooks.example.com/spendgate",
    "aria-describedby": "webhook-url-hint",
  });
  const description = h("input", { id: "webhook-description", name: "description", type: "text", maxlength: "200" });
  const boxes = EVENTS.map(([type, meaning]) =>
    h(
      "label",
      { class: "row" },
      h("input", { type: "checkbox", name: "events", value: type, checked: type === "approval.requested" }),
      h("span", null, h("code", null, type), ` (${meaning})`),
    ),
  );
  const submit = h("button", { type: "submit", class: "primary", id: "webhook-add" }, "Add endpoint");
  const secretBox = h("div", { id: "webhook-secret", hidden: true });
  const form = h(
    "form",
    { id: "webhook-form", "aria-labelledby": "add-title" },
    h(
      "div",
      { class: "field" },
      h("label", { for: "webhook-url" }, "Endpoint URL"),
      url,
      h("p", { class: "hint", id: "webhook-url-hint" }, "Deliveries are POSTed here, signed with a secret shown once below."),
    ),
    h("fieldset", null, h("legend", null, "Events to send"), boxes),
    h("div", { class: "field" }, h("label", { for: "webhook-description" }, "Description (optional)"), description),
    h("div", { class: "actions" }, submit),
  );
  const list = h("div", { id: "webhook-list" }, h("p", { class: "loading" }, "Loading your endpoints…"));
  const deliveriesTitle = h("h2", { id: "deliveries-title" }, "Deliveries");
  const deliveries = h("div", { id: "webhook-deliveries" }, h("p", { class: "muted" }, "Choose an endpoint above to see its deliveries."));

  replace(
    root,
    h("section", { class: "card", "aria-labelledby": "add-title" }, h("h2", { id: "add-title" }, "Add an endpoint"), form, secretBox),
    h("section", { class: "card", "aria-labelledby": "list-title" }, h("h2", { id: "list-title" }, "Your endpoints"), list),
    h("section", { class: "card", "aria-labelledby": "deliveries-title" }, deliveriesTitle, deliveries),
  );

  const loadList = async () => {
    const res = await api<{ endpoints: WebhookEndpoint[] }>("GET", "/webhooks", { auth: "required" });
    if (!res.endpoints.length) {
      replace(list, h("p", { id: "webhooks-empty" }, "No endpoints yet."));
      return;
    }
    replace(
      list,
      h(
        "table",
        { id: "webhooks-table" },
        h("caption", null, "Your webhook endpoints, newest first"),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["URL", "Events", "Status", "Added", "Actions"].map((c) => h("th", { scope: "col" }, c)),
          ),
        ),
        h("tbody", null, res.endpoints.map(endpointRow)),
      ),
    );
  };

  const endpointRow = (e: WebhookEndpoint) =>
    h(
      "tr",
      { "data-id": e.id, "data-status": e.status },
      h("td", { class: "mono" }, e.url, e.description ? [h("br"), h("span", { class: "muted small" }, e.description)] : null),
      h(
        "td",
        null,
        e.events.map((t, i) => [i ? ", " : "", h("code", null, t)]),
      ),
      h("td", null, h("span", { class: `badge status-${e.status === "active" ? "approved" : "expired"}` }, e.status)),
      h("td", null, time(e.createdAt, dateTime(e.createdAt))),
      h(
        "td",
        null,
        h("div", { class: "row" }, [
          h(
            "button",
            { type: "button", "data-action": "deliveries", "aria-label": `Show deliveries of ${e.url}`, onclick: () => show(e, 1) },
            "Deliveries",
          ),
          e.status === "active"
            ? h(
                "button",
                {
                  type: "button",
                  "data-action": "test",
                  "aria-label": `Send a test event to ${e.url}`,
                  onclick: () => act(() => sendTest(e)),
                },
                "Send test",
              )
            : null,
          e.status === "active"
            ? h(
                "button",
                {
                  type: "button",
                  class: "danger",
                  "data-action": "disable",
                  "aria-label": `Disable ${e.url}`,
                  onclick: () => act(() => disable(e)),
                },
                "Disable",
              )
            : null,
        ]),
      ),
    );

  const act = async (fn: () => Promise<void>) => {
    app.clearAlerts();
    try {
      await fn();
    } catch (err) {
      app.report(err, "change the webhook");
    }
  };

  const sendTest = async (e: WebhookEndpoint) => {
    await api("POST", `/webhooks/${e.id}/test`, { auth: "required" });
    app.notify(`A test event is on its way to ${e.url}.`);
    await show(e, 1);
  };

  const disable = async (e: WebhookEndpoint) => {
    await api("DELETE", `/webhooks/${e.id}`, { auth: "required" });
    app.notify(`Disabled ${e.url}: nothing more is sent to it.`);
    await loadList();
    if (selected?.id === e.id) await show({ ...e, status: "disabled" }, page);
  };

  const show = async (e: WebhookEndpoint, p: number) => {
    selected = e;
    page = p;
    replace(deliveriesTitle, `Deliveries to ${e.url}`);
    replace(deliveries, h("p", { class: "loading" }, "Loading deliveries…"));
    try {
      const res = await api<WebhookDeliveriesPage>("GET", `/webhooks/${e.id}/deliveries?limit=${PAGE_SIZE}&offset=${(p - 1) * PAGE_SIZE}`, {
        auth: "required",
      });
      renderDeliveries(res);
      announce(`Showing ${res.deliveries.length} of ${res.total} deliveries.`);
    } catch (err) {
      app.report(err, "load the deliveries");
      replace(deliveries, h("p", null, "The deliveries could not be loaded. See the message above."));
    }
  };

  const renderDeliveries = (res: WebhookDeliveriesPage) => {
    const pages = Math.max(1, Math.ceil(res.total / res.limit));
    const table = res.deliveries.length
      ? h(
          "table",
          { id: "deliveries-table" },
          h("caption", null, "Deliveries, newest first, with every attempt"),
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              ["Event", "Status", "Attempts", "Last result", "Next attempt"].map((c) => h("th", { scope: "col" }, c)),
            ),
          ),
          h("tbody", null, res.deliveries.map(deliveryRow)),
        )
      : h("p", { id: "deliveries-empty" }, "Nothing was sent to this endpoint yet.");
    replace(
      deliveries,
      table,
      h(
        "nav",
        { "aria-label": "Delivery pages", class: "pager" },
        h(
          "button",
          { type: "button", id: "deliveries-prev", disabled: page <= 1, onclick: () => selected && show(selected, page - 1) },
          "Previous page",
        ),
        h("span", { id: "deliveries-page" }, ` Page ${page} of ${pages} · ${res.total} deliveries `),
        h(
          "button",
          { type: "button", id: "deliveries-next", disabled: page >= pages, onclick: () => selected && show(selected, page + 1) },
          "Next page",
        ),
        h("button", { type: "button", id: "deliveries-refresh", onclick: () => selected && show(selected, page) }, "Refresh"),
      ),
    );
  };

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    app.clearAlerts();
    const events = boxes.flatMap((b) => {
      const input = b.querySelector("input");
      return input?.checked ? [input.value] : [];
    });
    submit.disabled = true;
    try {
      const created = await api<WebhookEndpoint & { secret: string }>("POST", "/webhooks", {
        auth: "required",
        body: { url: url.value.trim(), events, ...(description.value.trim() ? { description: description.value.trim() } : {}) },
      });
      secretBox.hidden = false;
      replace(
        secretBox,
        h("h3", null, "Your signing secret (shown once)"),
        h(
          "p",
          null,
          "Copy it now into your receiver: SpendGate keeps it encrypted and never shows it again. Verify each delivery's SpendGate-Signature with it (see docs/webhooks.md).",
        ),
        h("label", { for: "webhook-secret-value" }, "Secret"),
        h("input", { id: "webhook-secret-value", type: "text", readonly: true, value: created.secret, class: "mono", size: "60" }),
      );
      form.reset();
      announce(`Endpoint added. Copy its secret now: it is shown once.`);
      await loadList();
      await show(created, 1);
    } catch (err) {
      app.report(err, "add the endpoint");
    } finally {
      submit.disabled = false;
    }
  });

  await loadList().catch((err: unknown) => {
    app.report(err, "load your endpoints");
    replace(list, h("p", null, "Your endpoints could not be loaded. See the message above."));
  });
}

function deliveryRow(d: WebhookDelivery): HTMLTableRowElement {
  const last = d.lastHttpStatus !== null ? `HTTP ${d.lastHttpStatus}` : (d.lastError ?? "not sent yet");
  return h(
    "tr",
    { "data-id": d.id, "data-status": d.status },
    h(
      "td",
      null,
      h("code", null, d.type),
      h("br"),
      h("span", { class: "muted small mono" }, d.eventId),
      h("br"),
      time(d.createdAt, dateTime(d.createdAt)),
    ),
    h("td", null, h("span", { class: `badge status-${d.status}`, "data-field": "status" }, d.status)),
    h(
      "td",
      { class: "num" },
      String(d.attempts),
      d.log.length
        ? h(
            "details",
            null,
            h("summary", null, "Attempts"),
            h(
              "ol",
              { class: "plain small" },
              d.log.map((a) =>
                h(
                  "li",
                  null,
                  `#${a.attempt} ${dateTime(a.at)}: ${a.httpStatus !== null ? `HTTP ${a.httpStatus}` : a.error}${a.latencyMs !== null ? ` in ${a.latencyMs} ms` : ""}`,
                ),
              ),
            ),
          )
        : null,
    ),
    h("td", null, last, d.lastError && d.lastHttpStatus !== null ? [h("br"), h("span", { class: "muted small" }, d.lastError)] : null),
    h("td", null, d.nextAttemptAt ? time(d.nextAttemptAt, dateTime(d.nextAttemptAt)) : "—"),
  );
}
