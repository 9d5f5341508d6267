/**
 * /onboarding?agent=0x…: the owner activates an agent. The agent as the service knows it, sign-in, LinkAgent, then the
 * spend policy: the form shows exactly what the wallet will sign (the typed data, the normalised allowlist and its
 * Merkle root, computed here in the browser) before asking, then the deployed contract and the agent's next step.
 */
import { SessionExpiredError, api } from "../api";
import type { App } from "../app";
import { type Child, dateTime, focusOn, h, replace, time } from "../dom";
import { usdc } from "../amounts";
import { linkAgentData, nowSeconds } from "../typed";
import type { AgentSummary, PolicyView } from "../types";
import { policyEditor } from "./policyForm";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

interface State {
  agent: AgentSummary;
  policy: PolicyView | null;
}

export async function onboardingPage(app: App, root: HTMLElement): Promise<void> {
  const params = new URLSearchParams(location.search);
  const address = params.get("agent")?.trim() ?? "";
  // The code of the agent's activation link: the service links an agent only with it.
  const activationCode = params.get("code")?.trim() ?? "";
  const steps = {
    agent: step("agent", "1. The agent"),
    signIn: step("signin", "2. Sign in as the owner"),
    link: step("link", "3. Link the agent to your wallet"),
    policy: step("policy", "4. Spend policy"),
    done: step("done", "5. Your agent's next step"),
  };
  replace(root, steps.agent.section, steps.signIn.section, steps.link.section, steps.policy.section, steps.done.section);

  if (!ADDRESS.test(address)) {
    steps.agent.body(
      h(
        "p",
        null,
        address ? `"${address}" is not an agent address.` : "Open the activation link your agent gave you, or enter its address.",
      ),
      h(
        "form",
        { action: "/onboarding", method: "get" },
        h("label", { for: "agent-address" }, "Agent address"),
        h(
          "div",
          { class: "row" },
          h("input", {
            id: "agent-address",
            name: "agent",
            type: "text",
            required: true,
            pattern: "0x[0-9a-fA-F]{40}",
            autocomplete: "off",
            spellcheck: "false",
          }),
          h("button", { type: "submit" }, "Open"),
        ),
      ),
    );
    for (const s of [steps.signIn, steps.link, steps.policy, steps.done]) s.section.hidden = true;
    return;
  }

  steps.agent.body(h("p", { class: "loading" }, "Loading the agent…"));
  // Who owns the agent is shown to whoever holds its activation code, or to its signed-in owner (the owner key goes
  // along when there is a session): the Agents page's "Change the policy" links carry no code.
  const loadAgent = async (): Promise<AgentSummary> => {
    const path = `/agents/${address}?code=${encodeURIComponent(activationCode)}`;
    try {
      return await api<AgentSummary>("GET", path, { auth: !!app.session() });
    } catch (err) {
      // An expired owner key ends the session (api() clears it): read the public view, the page then offers sign-in.
      if (err instanceof SessionExpiredError) return api<AgentSummary>("GET", path, { auth: false });
      throw err;
    }
  };
  let loaded: AgentSummary;
  try {
    loaded = await loadAgent();
  } catch (err) {
    const problem = app.report(err, "load the agent");
    steps.agent.body(h("p", null, problem.detail));
    for (const s of [steps.signIn, steps.link, steps.policy, steps.done]) s.section.hidden = true;
    return;
  }

  const state: State = { agent: loaded, policy: null };

  const renderAgent = () => {
    const agent = state.agent;
    steps.agent.body(
      h(
        "dl",
        { class: "facts" },
        fact("Label", h("span", { "data-field": "label" }, agent.label)),
        fact("Network", h("span", { "data-field": "network" }, app.network(agent.network).chainName)),
        fact("Address", app.addressLink(agent.address, agent.address, agent.network)),
        fact("Created", time(agent.createdAt, dateTime(agent.createdAt))),
        fact("Owner", agent.ownerAddress ?? "not linked yet"),
        fact(
          "Policy contract",
          h(
            "span",
            null,
            app.addressLink(agent.policyContract, agent.policyContract, agent.network),
            agent.deployed ? " (deployed)" : " (not deployed yet: its address is known in advance)",
          ),
        ),
      ),
      agent.deployed
        ? null
        : h(
            "p",
            { class: "warn", id: "fund-after-deployment" },
            "Fund this agent only after its policy is deployed (step 4). Until then nothing on-chain says who owns its address, and money sent to it early is at your own risk.",
          ),
      state.policy?.warning ? h("p", { class: "warn", "data-field": "warning", role: "note" }, state.policy.warning) : null,
    );
  };

  const render = async (focusStep?: keyof typeof steps) => {
    const agent = state.agent;
    const session = app.session();
    renderAgent();

    // 2. sign in
    if (session) {
      steps.signIn.body(h("p", { "data-state": "signed-in" }, `Signed in as ${session.ownerAddress} with ${session.walletName}.`));
    } else {
      steps.signIn.body(
        h("p", null, "Your wallet signs a one-time Sign-In with Ethereum message. It costs nothing and moves no funds."),
        h(
          "button",
          {
            type: "button",
            class: "primary",
            id: "onboarding-sign-in",
            onclick: () => app.signInFromButton().then((ok) => (ok ? signedIn() : undefined)),
          },
          "Connect wallet and sign in",
        ),
      );
    }

    // 3. link
    const mine = !!session && agent.ownerAddress?.toLowerCase() === session.ownerAddress.toLowerCase();
    if (!session) {
      steps.link.body(h("p", { class: "muted" }, "Sign in first."));
    } else if (mine) {
      steps.link.body(h("p", { "data-state": "linked" }, `Linked to your wallet ${session.ownerAddress}.`));
    } else if (agent.ownerAddress) {
      steps.link.body(
        h(
          "p",
          { "data-state": "other-owner" },
          `This agent is linked to another owner, ${agent.ownerAddress}. Only that owner can set its policy. If this is your agent, sign in with that wallet.`,
        ),
      );
    } else if (!activationCode) {
      steps.link.body(
        h(
          "p",
          { "data-state": "no-code", role: "alert" },
          "This address has no activation code. Open the full activation link the agent gave you (it ends with &code=…); the agent can ask for it again with GET /wallet/activation.",
        ),
      );
    } else {
      const preview = h(
        "pre",
        { class: "typed", tabindex: 0, "aria-label": "LinkAgent typed data" },
        JSON.stringify(linkAgentData(agent.chainId, agent.address, session.ownerAddress, nowSeconds()), null, 2),
      );
      steps.link.body(
        h(
          "p",
          null,
          `Link ${agent.label} to ${session.ownerAddress}. Your wallet signs this LinkAgent message (EIP-712); only you can then change the agent's policy.`,
        ),
        h("details", null, h("summary", null, "What you will sign"), preview),
        h(
          "button",
          {
            type: "button",
            class: "primary",
            id: "link-agent",
            onclick: (e: Event) => link(e.currentTarget as HTMLButtonElement, preview),
          },
          "Sign and link this agent",
        ),
      );
    }

    // 4. policy (after linking)
    steps.policy.section.hidden = !mine;
    steps.done.section.hidden = true;
    if (mine) {
      if (!state.policy) {
        steps.policy.body(h("p", { class: "loading" }, "Reading the policy from the chain…"));
        state.policy = (await api<{ agents: PolicyView[] }>("GET", `/limits?address=${agent.address}`, { auth: "required" })).agents[0];
      }
      steps.policy.body(
        policyEditor(app, agent, state.policy, async () => {
          state.policy = (await api<{ agents: PolicyView[] }>("GET", `/limits?address=${agent.address}`, { auth: "required" })).agents[0];
          state.agent = { ...state.agent, deployed: state.policy.deployed };
          renderAgent();
          nextStep(app, steps.done, state.policy, false);
          // The form is long: bring its result (contract and transaction) into view rather than the page's end.
          focusOn(document.getElementById("policy-result"));
        }),
      );
      if (state.policy.deployed) nextStep(app, steps.done, state.policy, false);
    }
    if (focusStep) focusOn(steps[focusStep].heading);
  };

  /** Signed in from step 2: read the agent again with the owner key (it may be this owner's already). */
  const signedIn = async () => {
    try {
      state.agent = await loadAgent();
    } catch (err) {
      app.report(err, "load the agent");
    }
    await render("link");
  };

  const link = async (button: HTMLButtonElement, preview: HTMLElement) => {
    app.clearAlerts();
    button.disabled = true;
    button.textContent = "Waiting for your wallet…";
    try {
      // Signed for the agent's chain (its network's service domain).
      const { wallet, owner } = await app.signer(state.agent.network);
      const timestamp = nowSeconds();
      const data = linkAgentData(state.agent.chainId, state.agent.address, owner, timestamp);
      preview.textContent = JSON.stringify(data, null, 2);
      const ownerSignature = await wallet.signTypedData(owner, data);
      button.textContent = "Linking…";
      await api("POST", "/agents/link", {
        body: { agentAddress: state.agent.address, ownerAddress: owner, ownerSignature, timestamp, activationCode },
        auth: false,
      });
      state.agent = await loadAgent();
      app.notify(`${state.agent.label} is linked to your wallet. Now set its spend policy.`);
      await render("policy");
    } catch (err) {
      app.report(err, "link the agent");
      button.disabled = false;
      button.textContent = "Sign and link this agent";
    }
  };

  await render();
}

function step(id: string, title: string) {
  const heading = h("h2", { id: `${id}-title`, tabindex: -1 }, title);
  const content = h("div", { class: "step-body" });
  const section = h("section", { class: "card step", id: `${id}-step`, "aria-labelledby": `${id}-title` }, heading, content);
  return { section, heading, body: (...children: Child[]) => replace(content, ...children) };
}

function fact(term: string, value: Node | string): HTMLElement[] {
  return [h("dt", null, term), h("dd", null, value)];
}

function nextStep(app: App, done: ReturnType<typeof step>, policy: PolicyView, focus = true): void {
  const base = app.config.baseUrl || location.origin;
  done.section.hidden = false;
  done.body(
    h(
      "p",
      { "data-state": "deployed" },
      "The policy is active on-chain. Tell your agent; it checks with ",
      h("code", null, "GET /limits"),
      " (the get_limits tool over MCP):",
    ),
    h(
      "pre",
      { class: "code", tabindex: 0, "aria-label": "The agent's check" },
      `curl -s "${base}/limits?address=${policy.address}" \\\n  -H "Authorization: Bearer <the agent's API key>"`,
    ),
    h(
      "p",
      null,
      `It answers with deployed: true, a per-payment limit of ${usdc(policy.perTxLimit)}, a daily budget of ${usdc(policy.dailyBudget)} and approvals above ${usdc(policy.approvalThreshold)}. Its MCP tools work from then on: no restart is needed.`,
    ),
    h(
      "p",
      { id: "fund-now" },
      `The policy is deployed: you can now fund the agent's wallet ${policy.address} with USDC. Its owner is fixed on-chain, and only payments your policy allows (or your own Withdraw) can move the funds.`,
    ),
    h(
      "p",
      null,
      h("a", { href: "/agents" }, "See your agents"),
      " · ",
      h("a", { href: "/approvals" }, "Approvals"),
      " · ",
      h("a", { href: "/ledger" }, "Ledger"),
    ),
  );
  if (focus) focusOn(done.heading);
}
