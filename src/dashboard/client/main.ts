/** Boot: load the page config, restore the owner's session and wallet, then render the page the server named. */
import { loadConfig } from "./api";
import { App } from "./app";
import { byId, h, replace } from "./dom";
import { describe } from "./errors";
import { SKEW_WARNING_SECONDS, clockSkew, syncChainClock } from "./typed";
import { agentsPage } from "./pages/agents";
import { approvalsPage } from "./pages/approvals";
import { homePage } from "./pages/home";
import { ledgerPage } from "./pages/ledger";
import { onboardingPage } from "./pages/onboarding";
import { policyPage } from "./pages/policy";
import { webhooksPage } from "./pages/webhooks";

const PAGES: Record<string, (app: App, root: HTMLElement) => Promise<void> | void> = {
  "/": homePage,
  "/onboarding": onboardingPage,
  "/agents": agentsPage,
  "/policy": policyPage,
  "/approvals": approvalsPage,
  "/ledger": ledgerPage,
  "/webhooks": webhooksPage,
};

/** Last resort: whatever fails is shown as a message, never as a blank page. */
function showFatal(err: unknown): void {
  const problem = describe(err, "load this page");
  replace(
    byId("alerts"),
    h(
      "div",
      { class: "problem", "data-kind": problem.kind },
      h("p", { class: "problem-title" }, h("strong", null, problem.title)),
      h("p", null, problem.detail),
      h("div", { class: "actions" }, h("button", { type: "button", onclick: () => location.reload() }, "Reload the page")),
    ),
  );
}

/**
 * Signatures are dated max(browser clock, chain time): when the two differ by more than a minute, the owner is told
 * (a wrong computer clock, or a chain that stopped), before anything is signed.
 */
function showClockWarning(root: HTMLElement): void {
  const skew = clockSkew();
  if (skew === null || Math.abs(skew) <= SKEW_WARNING_SECONDS) return;
  const minutes = Math.round(Math.abs(skew) / 60);
  const text =
    skew > 0
      ? `This computer's clock is about ${minutes} min behind the chain's latest block. Signatures are dated by the chain's time; set your clock right (automatic time) if the service refuses them.`
      : `The chain's latest block is about ${minutes} min behind this computer's clock. Signatures are dated by your clock; if the service or the contract refuses them, check your computer's time and the chain's status.`;
  root.before(h("div", { class: "notice", id: "clock-warning", "data-kind": "warning" }, h("p", null, h("strong", null, "Clock: "), text)));
}

async function boot(): Promise<void> {
  const root = byId("page");
  let app: App;
  try {
    app = new App(await loadConfig());
    syncChainClock(app.config.chainTime);
  } catch (err) {
    replace(root);
    showFatal(err);
    return;
  }
  window.addEventListener("unhandledrejection", (e) => app.report(e.reason, "finish that"));
  app.renderAccount();
  replace(root);
  showClockWarning(root);
  await app.restoreWallet().catch(() => undefined);
  const page = PAGES[document.body.dataset.page ?? location.pathname] ?? homePage;
  try {
    await page(app, root);
  } catch (err) {
    app.report(err, "load this page");
  }
}

window.addEventListener("error", (e) => showFatal(e.error ?? e.message));
void boot();
