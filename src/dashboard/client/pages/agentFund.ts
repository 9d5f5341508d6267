/**
 * The sandbox's "Fund" on an agent's card (embedded mode only: the dev faucet, POST /dev/faucet, answers 404 anywhere
 * else): test USDC minted to the agent's wallet, or test ETH sent to it, on the agent's own sandbox chain.
 */
import { api } from "../api";
import type { App } from "../app";
import { h } from "../dom";
import type { AgentSummary } from "../types";

export function fundForm(app: App, a: AgentSummary, reload: () => Promise<void>): HTMLElement | null {
  if (app.config.mode !== "embedded") return null;
  const id = (name: string) => `fund-${a.address}-${name}`;
  const token = h(
    "select",
    { id: id("token"), name: "token" },
    h("option", { value: "USDC" }, "USDC"),
    h("option", { value: "ETH" }, "ETH"),
  );
  const amount = h("input", { type: "text", id: id("amount"), name: "amount", required: true, inputmode: "decimal", value: "10" });
  const submit = h("button", { type: "submit", class: "primary", "data-action": "fund" }, `Fund ${a.label}`);
  const form = h(
    "form",
    { class: "fund", "aria-label": `Fund the wallet of ${a.label} from the sandbox faucet` },
    h("h3", null, "Fund (sandbox faucet)"),
    h(
      "div",
      { class: "row" },
      h("label", { for: id("amount") }, "Amount to give"),
      amount,
      h("label", { for: id("token") }, "Token to give"),
      token,
      submit,
    ),
    h("p", { class: "hint" }, "Test money from the sandbox's faucet, on this agent's sandbox chain. It exists nowhere else."),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void (async () => {
      app.clearAlerts();
      const label = submit.textContent;
      submit.disabled = true;
      submit.textContent = "Funding…";
      try {
        const res = await api<{ txHash: string; amount: string; currency: string }>("POST", "/dev/faucet", {
          body: { agentAddress: a.address, amount: amount.value.trim(), token: token.value },
        });
        await reload();
        app.notify(`Gave ${a.label} ${res.amount} ${res.currency} from the sandbox faucet. `, app.txLink(res.txHash, undefined, a.network));
      } catch (err) {
        app.report(err, "fund the agent");
        submit.disabled = false;
        submit.textContent = label;
      }
    })();
  });
  return form;
}
