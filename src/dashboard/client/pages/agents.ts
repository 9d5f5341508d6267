/**
 * /agents: the owner's agents with their wallets (the contract that holds each agent's funds), on-chain policies,
 * balances, today's spend against the budget and what is held in payment channels (with the channels, each closable
 * for a refund: agentChannels.ts), the kill switch (SetPaused signed by the owner, relayed by POST
 * /agents/:address/pause: payments stop at once) and an owner-signed withdrawal from the wallet.
 */
import { api, freshChainTime } from "../api";
import type { App } from "../app";
import { toUnits, tokenAmount, usdc } from "../amounts";
import { dateTime, h, replace, time } from "../dom";
import { nowSeconds, setPausedData, syncChainClock, withdrawData } from "../typed";
import type { AgentSummary, Balance, ChannelView, PolicyView } from "../types";
import { channelsSection, heldLine, loadChannels } from "./agentChannels";
import { fundForm } from "./agentFund";

export async function agentsPage(app: App, root: HTMLElement): Promise<void> {
  if (!app.session()) {
    app.signInPrompt(root, "your agents");
    return;
  }
  const list = h("div", { class: "agents", id: "agent-list" }, h("p", { class: "loading" }, "Loading your agents…"));
  const refresh = h("button", { type: "button", id: "agents-refresh", onclick: () => load() }, "Refresh");
  replace(root, h("div", { class: "toolbar" }, refresh), list);

  const load = async () => {
    try {
      const [{ agents }, { agents: policies }] = await Promise.all([
        api<{ agents: AgentSummary[] }>("GET", "/wallet/agents", { auth: "required" }),
        api<{ agents: PolicyView[] }>("GET", "/limits", { auth: "required" }),
      ]);
      if (!agents.length) {
        replace(list, h("p", null, "No agents are linked to your wallet yet. Open the activation link an agent gives you to link it."));
        return;
      }
      const [balances, channels] = await Promise.all([
        Promise.all(agents.map((a) => api<Balance>("GET", `/wallet/balance?address=${a.address}`, { auth: "required" }).catch(() => null))),
        Promise.all(agents.map((a) => (a.deployed ? loadChannels(a) : Promise.resolve([])))),
      ]);
      replace(
        list,
        agents.map((a, i) => agentCard(app, a, policies.find((p) => p.address === a.address) ?? null, balances[i], channels[i], load)),
      );
    } catch (err) {
      app.report(err, "load your agents");
      replace(list, h("p", null, "Your agents could not be loaded. See the message above."));
    }
  };
  await load();
}

function agentCard(
  app: App,
  a: AgentSummary,
  policy: PolicyView | null,
  balance: Balance | null,
  channels: ChannelView[] | null,
  reload: () => Promise<void>,
): HTMLElement {
  const titleId = `agent-${a.address}-title`;
  const paused = policy?.paused ?? balance?.paused ?? false;
  const card = h("article", { class: "card agent", "data-agent": a.address, "aria-labelledby": titleId });
  const status = policy?.deployed ? (paused ? "Paused: every payment is blocked" : "Active") : "No policy yet";
  const facts: [string, Node | string][] = [
    ["Network", a.network],
    ["Wallet (holds the funds)", app.addressLink(a.address, a.address, a.network)],
    ["Created", time(a.createdAt, dateTime(a.createdAt))],
    ["Status", h("span", { class: paused ? "badge danger" : policy?.deployed ? "badge ok" : "badge", "data-field": "status" }, status)],
  ];
  if (policy?.deployed) {
    facts.push(
      ["Per-payment limit", usdc(policy.perTxLimit)],
      ["Daily budget", usdc(policy.dailyBudget)],
      ["Approval above", usdc(policy.approvalThreshold)],
      ["Allowlist", policy.allowlist.length ? policy.allowlist.join(", ") : "empty (no merchant allowed)"],
      [
        "Payees",
        policy.allowlist.length
          ? policy.allowlist.map((e) => `${e} → ${policy.payees?.[e] ?? "any address"}`).join("; ")
          : "none (no merchant allowed)",
      ],
    );
  }
  if (balance) facts.push(["Balance", `${usdc(balance.usdc)} · ${tokenAmount(balance.eth, "ETH")}`]);

  const spend = policy?.deployed ? spendMeter(a.address, policy) : null;
  const pauseButton = policy?.deployed
    ? h(
        "button",
        {
          type: "button",
          class: paused ? "primary" : "danger",
          "data-action": paused ? "resume" : "pause",
          "aria-describedby": `${a.address}-pause-hint`,
          onclick: (e: Event) => setPaused(app, a, !paused, e.currentTarget as HTMLButtonElement, reload),
        },
        paused ? `Resume payments of ${a.label}` : `Pause all payments of ${a.label}`,
      )
    : h("a", { href: `/onboarding?agent=${a.address}`, class: "button" }, `Set the spend policy of ${a.label}`);
  replace(
    card,
    h("h2", { id: titleId }, a.label),
    h(
      "dl",
      { class: "facts" },
      facts.map(([t, d]) => [h("dt", null, t), h("dd", null, d)]),
    ),
    policy?.warning ? h("p", { class: "warn", "data-field": "warning", role: "note" }, policy.warning) : null,
    spend,
    policy?.deployed ? heldLine(a, policy.heldInChannels) : null,
    h(
      "div",
      { class: "actions" },
      pauseButton,
      policy?.deployed ? h("a", { href: `/policy?agent=${a.address}`, class: "button" }, `Edit the policy of ${a.label}`) : null,
      h("a", { href: `/ledger?agent=${a.address}`, class: "button" }, `Ledger of ${a.label}`),
    ),
    policy?.deployed
      ? h(
          "p",
          { class: "hint", id: `${a.address}-pause-hint` },
          paused
            ? "Resuming lets payments through again under the policy. Your wallet signs SetPaused(false) for the agent's current epoch: payments authorised before the pause stay dead."
            : "The kill switch: your wallet signs SetPaused(true) and the contract blocks every further payment at once, even if the server were compromised.",
        )
      : null,
    policy?.deployed ? fundForm(app, a, reload) : null,
    policy?.deployed ? channelsSection(app, a, channels, reload) : null,
    policy?.deployed ? withdrawForm(app, a, reload) : null,
  );
  return card;
}

/** Funds out of the agent's wallet: the owner signs Withdraw, the service relays it (works while paused). */
function withdrawForm(app: App, a: AgentSummary, reload: () => Promise<void>): HTMLElement {
  const id = (name: string) => `withdraw-${a.address}-${name}`;
  const token = h(
    "select",
    { id: id("token"), name: "token" },
    h("option", { value: "USDC" }, "USDC"),
    h("option", { value: "ETH" }, "ETH"),
  );
  const to = h("input", {
    type: "text",
    id: id("to"),
    name: "to",
    required: true,
    autocomplete: "off",
    placeholder: "0x…",
    value: app.session()?.ownerAddress ?? "",
  });
  const amount = h("input", { type: "text", id: id("amount"), name: "amount", required: true, inputmode: "decimal", placeholder: "1.50" });
  const submit = h("button", { type: "submit", "data-action": "withdraw" }, `Withdraw from ${a.label}`);
  const form = h(
    "form",
    { class: "withdraw", "aria-label": `Withdraw from the wallet of ${a.label}` },
    h("h3", null, "Withdraw"),
    h("label", { for: id("token") }, "Token"),
    token,
    h("label", { for: id("to") }, "Recipient address"),
    to,
    h("label", { for: id("amount") }, "Amount"),
    amount,
    submit,
    h(
      "p",
      { class: "hint" },
      "Your wallet signs Withdraw(agent, token, to, amount, timestamp); only your signature moves funds out of the agent's wallet, even while it is paused.",
    ),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void withdraw(app, a, { token: token.value as "USDC" | "ETH", to: to.value.trim(), amount: amount.value.trim() }, submit, reload);
  });
  return form;
}

/** Base units of a decimal string with at most `decimals` decimals, else null. */
function units(decimal: string, decimals: number): bigint | null {
  if (decimals === 6) return toUnits(decimal);
  const m = /^(\d{1,30})(?:\.(\d{1,18}))?$/.exec(decimal);
  if (!m || (m[2] ?? "").length > decimals) return null;
  return BigInt(m[1]) * 10n ** BigInt(decimals) + BigInt((m[2] ?? "").padEnd(decimals, "0") || "0");
}

async function withdraw(
  app: App,
  a: AgentSummary,
  w: { token: "USDC" | "ETH"; to: string; amount: string },
  button: HTMLButtonElement,
  reload: () => Promise<void>,
): Promise<void> {
  app.clearAlerts();
  const amount = units(w.amount, w.token === "ETH" ? 18 : 6);
  if (amount === null || amount <= 0n || !/^0x[0-9a-fA-F]{40}$/.test(w.to)) {
    app.report(new Error("Enter a recipient address (0x…) and an amount greater than 0."), "withdraw");
    return;
  }
  const label = button.textContent;
  button.disabled = true;
  button.textContent = "Waiting for your wallet…";
  try {
    const { wallet, owner } = await app.signer(a.network);
    const timestamp = nowSeconds();
    const token = w.token === "ETH" ? "0x0000000000000000000000000000000000000000" : app.network(a.network).usdcAddress;
    const humanSignature = await wallet.signTypedData(owner, withdrawData(a.chainId, a.address, { token, to: w.to, amount }, timestamp));
    button.textContent = "Withdrawing on-chain…";
    const res = await api<{ txHash: string; amount: string }>("POST", `/agents/${a.address}/withdraw`, {
      auth: "required",
      body: { token: w.token, to: w.to, amount: w.amount, humanSignature, timestamp },
    });
    await reload();
    app.notify(`Withdrew ${res.amount} ${w.token} from ${a.label} to ${w.to}. `, app.txLink(res.txHash, undefined, a.network));
  } catch (err) {
    app.report(err, "withdraw");
    button.disabled = false;
    button.textContent = label;
  }
}

function spendMeter(address: string, p: PolicyView): HTMLElement {
  const id = `spend-${address}`;
  const budget = Number(p.dailyBudget);
  const spent = Number(p.spentToday);
  return h(
    "div",
    { class: "spend" },
    h("label", { for: id }, "Spent today"),
    h("meter", {
      id,
      min: 0,
      max: budget > 0 ? budget : 1,
      value: Math.min(spent, budget),
      optimum: 0,
      high: budget * 0.8,
      low: budget * 0.5,
    }),
    h(
      "span",
      { "data-field": "spent" },
      ` ${usdc(p.spentToday)} of ${usdc(p.dailyBudget)} (${usdc(p.remainingDailyBudget)} left today, UTC)`,
    ),
    // The other windows the owner limited (hourly, weekly, 30 days, lifetime): what remains in each.
    (p.windows ?? [])
      .filter((w) => w.window !== "daily")
      .map((w) => h("span", { class: "window", "data-window": w.window }, ` ${w.window}: ${usdc(w.remaining)} left of ${usdc(w.budget)}.`)),
  );
}

/** The timestamp this page last signed a pause or resume with, per agent. */
const lastSigned = new Map<string, number>();
async function setPaused(
  app: App,
  a: AgentSummary,
  paused: boolean,
  button: HTMLButtonElement,
  reload: () => Promise<void>,
): Promise<void> {
  app.clearAlerts();
  const label = button.textContent;
  button.disabled = true;
  button.textContent = "Waiting for your wallet…";
  try {
    const { wallet, owner } = await app.signer(a.network);
    // The epoch is read now, not from the card: a resume must name the agent's current epoch (a pause, a policy,
    // operator or owner change since the card was drawn starts a new one), and the contract refuses any other.
    const current = await api<{ agents: PolicyView[] }>("GET", `/limits?address=${a.address}`, { auth: "required" });
    const epoch = current.agents[0]?.epoch ?? 0;
    // A resume must be dated after the pause as the chain recorded it (its block time, if later): read the chain's
    // clock again rather than the one of the page load.
    const chainTime = await freshChainTime().catch(() => undefined);
    if (chainTime !== undefined) syncChainClock(chainTime);
    // The contract takes an owner action only if it is dated after the last one (timestamps in whole seconds): a
    // resume clicked within the second of its pause is dated one second later, not refused.
    // And after the latest block: the contract keeps the later of a pause's timestamp and its block time, and a busy
    // chain's block may be a second ahead of the clock this page reads from it.
    const timestamp = Math.max(nowSeconds(), (chainTime ?? 0) + 1, (lastSigned.get(a.address) ?? 0) + 1);
    lastSigned.set(a.address, timestamp);
    const humanSignature = await wallet.signTypedData(
      owner,
      setPausedData(a.chainId, a.policyContract, a.address, { paused, epoch }, timestamp),
    );
    button.textContent = paused ? "Pausing on-chain…" : "Resuming on-chain…";
    const res = await api<{ txHash: string }>("POST", `/agents/${a.address}/pause`, {
      auth: "required",
      body: { paused, epoch, humanSignature, timestamp },
    });
    await reload();
    app.notify(
      paused ? `${a.label} is paused: every payment is blocked on-chain. ` : `${a.label} is active again. `,
      app.txLink(res.txHash, undefined, a.network),
    );
    document.querySelector<HTMLElement>(`[data-agent="${a.address}"] [data-action]`)?.focus();
  } catch (err) {
    app.report(err, paused ? "pause the agent" : "resume the agent");
    button.disabled = false;
    button.textContent = label;
  }
}
