/** Overview: what SpendGate is, sign-in, the owner's agents and pending approvals at a glance, open an activation. */
import { api } from "../api";
import type { App } from "../app";
import { h, replace, shortAddress } from "../dom";
import type { AgentSummary, ApprovalItem, PolicyView } from "../types";

export async function homePage(app: App, root: HTMLElement): Promise<void> {
  const session = app.session();
  const overview = h("section", { class: "card", "aria-labelledby": "overview-title" }, h("h2", { id: "overview-title" }, "Overview"));
  const open = activationForm();
  if (!session) {
    replace(
      overview,
      h("h2", { id: "overview-title" }, "Control what your AI agents spend"),
      h(
        "p",
        null,
        "Each agent pays for services in USDC through SpendGate. The rules — a per-payment limit, a daily budget, the merchants it may pay and the amount above which you approve each payment — live in a contract on-chain that only your wallet's signature can change.",
      ),
      h(
        "button",
        { type: "button", class: "primary", onclick: () => app.signInFromButton().then((ok) => ok && location.reload()) },
        "Connect wallet and sign in",
      ),
      app.sandboxButton(),
    );
    replace(root, overview, open);
    return;
  }
  replace(root, overview, open);
  const [agents, approvals, limits] = await Promise.all([
    api<{ agents: AgentSummary[] }>("GET", "/wallet/agents", { auth: "required" }),
    api<{ approvals: ApprovalItem[] }>("GET", "/approvals", { auth: "required" }),
    api<{ agents: PolicyView[] }>("GET", "/limits", { auth: "required" }),
  ]);
  const paused = new Set(limits.agents.filter((p) => p.paused).map((p) => p.address));
  const pending = approvals.approvals.length;
  replace(
    overview,
    h("h2", { id: "overview-title" }, "Overview"),
    h(
      "ul",
      { class: "stats" },
      h(
        "li",
        null,
        h(
          "a",
          { href: "/agents" },
          h("span", { class: "stat" }, String(agents.agents.length)),
          agents.agents.length === 1 ? " agent" : " agents",
        ),
      ),
      h(
        "li",
        null,
        h(
          "a",
          { href: "/approvals" },
          h("span", { class: "stat" }, String(pending)),
          pending === 1 ? " payment waiting for approval" : " payments waiting for approval",
        ),
      ),
    ),
    agents.agents.length
      ? h(
          "ul",
          { class: "plain" },
          agents.agents.map((a) =>
            h(
              "li",
              null,
              h("strong", null, a.label),
              ` ${shortAddress(a.address)} — `,
              !a.deployed
                ? h("a", { href: `/onboarding?agent=${a.address}` }, "set its spend policy")
                : paused.has(a.address)
                  ? h("span", { class: "badge danger" }, "paused")
                  : ["policy active · ", h("a", { href: `/policy?agent=${a.address}` }, "edit its policy")],
            ),
          ),
        )
      : h("p", null, "No agents yet. When an agent is created it gives you an activation link; open it here."),
  );
}

function activationForm(): HTMLElement {
  const input = h("input", {
    id: "activate-agent",
    name: "agent",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    pattern: "0x[0-9a-fA-F]{40}",
    required: true,
    "aria-describedby": "activate-hint",
  });
  return h(
    "section",
    { class: "card", "aria-labelledby": "activate-title" },
    h("h2", { id: "activate-title" }, "Activate an agent"),
    h(
      "form",
      { action: "/onboarding", method: "get" },
      h("label", { for: "activate-agent" }, "Agent address"),
      h("p", { id: "activate-hint", class: "hint" }, "The 0x address in the activation link your agent gave you."),
      h("div", { class: "row" }, input, h("button", { type: "submit" }, "Open")),
    ),
  );
}
