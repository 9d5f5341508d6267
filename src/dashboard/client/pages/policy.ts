/**
 * /policy?agent=0x…: "Edit policy" for an agent that is already active: the agent and the policy in force, then the
 * same form as activation (policyForm.ts: the SetPolicy the wallet signs, every allowlist entry in clear), without the
 * activation steps. An agent without a policy yet, or of another owner, is sent to its activation page.
 */
import { api } from "../api";
import type { App } from "../app";
import { focusOn, h, replace } from "../dom";
import { usdc } from "../amounts";
import type { AgentSummary, PolicyView } from "../types";
import { policyEditor } from "./policyForm";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export async function policyPage(app: App, root: HTMLElement): Promise<void> {
  const address = new URLSearchParams(location.search).get("agent")?.trim() ?? "";
  const session = app.session();
  if (!session) {
    app.signInPrompt(root, "the policy of your agent");
    return;
  }
  if (!ADDRESS.test(address)) {
    replace(root, h("p", null, "Choose an agent on ", h("a", { href: "/agents" }, "your agents' page"), " to edit its policy."));
    return;
  }
  const [agent, policy] = await Promise.all([
    api<AgentSummary>("GET", `/agents/${address}`, { auth: "required" }),
    api<{ agents: PolicyView[] }>("GET", `/limits?address=${address}`, { auth: "required" }).then((r) => r.agents[0]),
  ]);
  const activation = h("a", { href: `/onboarding?agent=${agent.address}` }, "its activation page");
  if (agent.ownerAddress?.toLowerCase() !== session.ownerAddress.toLowerCase() || !policy.deployed) {
    replace(
      root,
      h(
        "section",
        { class: "card", "aria-labelledby": "policy-missing-title" },
        h("h2", { id: "policy-missing-title" }, agent.label),
        h(
          "p",
          { "data-state": policy.deployed ? "other-owner" : "no-policy" },
          policy.deployed ? "This agent is not linked to the wallet you signed in with. See " : "This agent has no policy yet: set it on ",
          activation,
          ".",
        ),
      ),
    );
    return;
  }

  const summary = h("dl", { class: "facts", id: "policy-in-force" });
  const showSummary = (p: PolicyView) =>
    replace(
      summary,
      [
        ["Agent", agent.label],
        ["Network", app.network(agent.network).chainName],
        ["Wallet and policy contract", app.addressLink(agent.policyContract, agent.policyContract, agent.network)],
        ["In force", `${usdc(p.perTxLimit)} per payment, ${usdc(p.dailyBudget)} a day, approval above ${usdc(p.approvalThreshold)}`],
        ["Status", p.paused ? "paused: every payment is blocked" : "active"],
      ].map(([t, d]) => [h("dt", null, t), h("dd", null, d)]),
    );
  showSummary(policy);
  replace(
    root,
    h(
      "section",
      { class: "card", "aria-labelledby": "policy-agent-title" },
      h("h2", { id: "policy-agent-title" }, agent.label),
      summary,
      h("p", null, h("a", { href: "/agents" }, "Back to your agents")),
    ),
    h(
      "section",
      { class: "card", "aria-labelledby": "policy-edit-title" },
      h("h2", { id: "policy-edit-title" }, "Change the policy"),
      policyEditor(app, agent, policy, async () => {
        const read = await api<{ agents: PolicyView[] }>("GET", `/limits?address=${agent.address}`, { auth: "required" });
        showSummary(read.agents[0]);
        focusOn(document.getElementById("policy-result"));
      }),
    ),
  );
}
