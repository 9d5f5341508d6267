/**
 * The page controller shared by every page: the owner's session (SIWE sign-in, key in sessionStorage), the chosen
 * wallet, the header's account area, and how problems and results are shown.
 */
import { getAddress } from "viem";
import { createSiweMessage } from "viem/siwe";
import {
  SignInRequiredError,
  api,
  getSession,
  onSessionChange,
  setSession,
  type DashboardConfig,
  type DashboardNetwork,
  type OwnerSession,
} from "./api";
import { announce, byId, h, replace, shortAddress } from "./dom";
import { describe, type Problem } from "./errors";
import { SANDBOX_NAME, SANDBOX_RDNS, sandboxWallet } from "./sandboxWallet";
import { CancelledError, SANDBOX_HINT, pickWallet } from "./walletPicker";
import { nowSeconds } from "./typed";
import { Wallet, WalletMissingError, WrongChainError, chainLabel, discoverWallets, type WalletEntry } from "./wallet";

export class App {
  private wallet: Wallet | null = null;
  private chainWarning: string | null = null;

  constructor(readonly config: DashboardConfig) {
    onSessionChange(() => this.renderAccount());
    // Outside a sandbox, a sandbox key an earlier sandbox left in this tab is deleted, and the session it signed ended.
    if (config.mode !== "embedded") {
      sandboxWallet(config, false);
      if (getSession()?.wallet === SANDBOX_RDNS) setSession(null);
    }
  }

  /** The sandbox wallet can be chosen (embedded mode only). */
  get sandbox(): boolean {
    return this.config.mode === "embedded";
  }

  session(): OwnerSession | null {
    return getSession();
  }

  // ---- wallets -------------------------------------------------------------------------------------------------

  /**
   * The wallet used to sign in (found again by its EIP-6963 rdns), else the owner's pick among installed wallets (and,
   * in a sandbox, the sandbox wallet: offered, never picked for her; `sandbox` is her choice of it).
   */
  async chooseWallet(forcePick = false, sandbox = false): Promise<Wallet> {
    if (this.wallet && !forcePick) return this.wallet;
    if (sandbox && this.sandbox) return this.useWallet(sandboxWallet(this.config, true));
    const remembered = this.session()?.wallet;
    const kept = !forcePick && remembered === SANDBOX_RDNS ? sandboxWallet(this.config, false) : null;
    if (kept) return this.useWallet(kept);
    const wallets = await discoverWallets();
    if (!wallets.length) throw new WalletMissingError();
    let entry = !forcePick && remembered ? wallets.find((w) => (w.info.rdns || w.info.uuid) === remembered) : undefined;
    if (!entry) {
      const picked = wallets.length === 1 ? wallets[0] : await pickWallet(wallets, this.sandbox);
      entry = picked === "sandbox" ? sandboxWallet(this.config, true) : picked;
    }
    return this.useWallet(entry);
  }

  private useWallet(entry: WalletEntry): Wallet {
    const wallet = new Wallet(entry, this.config);
    this.wallet = wallet;
    wallet.on("chainChanged", (id) => {
      this.chainWarning = this.served(String(id)) ? null : String(id);
      this.renderAccount();
    });
    wallet.on("accountsChanged", () => this.renderAccount());
    return wallet;
  }

  /** On page load: reconnect to the signed-in wallet without prompting, to show its network. */
  async restoreWallet(): Promise<void> {
    const session = this.session();
    if (!session) return;
    const wallets = await discoverWallets();
    const entry =
      session.wallet === SANDBOX_RDNS
        ? sandboxWallet(this.config, false)
        : wallets.find((w) => (w.info.rdns || w.info.uuid) === session.wallet);
    if (!entry) return;
    const wallet = this.useWallet(entry);
    try {
      const chain = await wallet.chainId();
      this.chainWarning = this.served(chain) ? null : chain;
    } catch {
      this.chainWarning = null;
    }
    this.renderAccount();
  }

  /** The network `name` as the service runs it (the agent's); the first network for a name it does not run. */
  network(name?: string): DashboardNetwork {
    return this.config.networks.find((n) => n.name === name) ?? this.config.networks[0];
  }

  /** Whether a wallet on chain `hex` is on a network the service runs. */
  private served(hex: string): boolean {
    return this.config.networks.some((n) => n.chainIdHex === hex.toLowerCase());
  }

  /**
   * The wallet, on the chain of `network` (the agent's: its owner signs for it), with the signed-in owner's account
   * selected: ready to sign for the owner.
   */
  async signer(network?: string): Promise<{ wallet: Wallet; owner: string }> {
    const session = this.session();
    if (!session) throw new SignInRequiredError();
    const wallet = await this.chooseWallet();
    await wallet.ensureChain(this.network(network));
    this.chainWarning = null;
    this.renderAccount();
    await wallet.ensureAccount(session.ownerAddress);
    return { wallet, owner: session.ownerAddress };
  }

  // ---- sign-in -------------------------------------------------------------------------------------------------

  /** Sign-In with Ethereum: connect, check the network, sign the EIP-4361 message, keep the owner key for this tab. */
  async signIn(sandbox = false): Promise<OwnerSession> {
    const wallet = await this.chooseWallet(true, sandbox);
    const address = getAddress(await wallet.connect());
    // Signed for the network the wallet is on when the service runs it, else for the first (the wallet switches).
    const on = await this.walletNetwork(wallet);
    await wallet.ensureChain(on);
    this.chainWarning = null;
    const { nonce } = await api<{ nonce: string }>("POST", "/auth/siwe/nonce", { body: { address }, auth: false });
    const now = new Date(nowSeconds() * 1000); // the owner clock (browser or chain, the later), never the server's
    const message = createSiweMessage({
      domain: location.host,
      uri: location.origin,
      address,
      chainId: on.chainId,
      nonce,
      version: "1",
      statement: "Sign in to SpendGate to manage your agents' spending. This signature costs nothing and moves no funds.",
      issuedAt: now,
      expirationTime: new Date(now.getTime() + 10 * 60_000),
    });
    const signature = await wallet.personalSign(address, message);
    const res = await api<{ apiKey: string; ownerAddress: string; expiresAt: string }>("POST", "/auth/siwe/verify", {
      body: { message, signature },
      auth: false,
    });
    const session: OwnerSession = { ...res, wallet: wallet.id, walletName: wallet.name };
    setSession(session);
    announce(`Signed in as ${res.ownerAddress}.`);
    return session;
  }

  signOut(): void {
    setSession(null);
    this.wallet = null;
    announce("Signed out.");
  }

  /** Runs a sign-in from a button: problems are shown, a closed picker is not one. Resolves true when signed in. */
  async signInFromButton(sandbox = false): Promise<boolean> {
    this.clearAlerts();
    try {
      await this.signIn(sandbox);
      return true;
    } catch (err) {
      if (!(err instanceof CancelledError)) this.report(err, "sign in");
      return false;
    }
  }

  // ---- showing things ------------------------------------------------------------------------------------------

  clearAlerts(): void {
    replace(byId("alerts"));
  }

  /** Shows a problem at the top of the page (an ARIA alert) with what to do; never leaves the page blank. */
  report(err: unknown, doing?: string): Problem {
    if (err instanceof CancelledError) return { kind: "cancelled", title: "", detail: "" };
    const problem = describe(err, doing);
    if (problem.kind === "signed-out") this.renderAccount();
    const actions: (HTMLElement | null)[] = [];
    if (problem.action === "sign-in") {
      actions.push(
        h(
          "button",
          { type: "button", class: "primary", onclick: () => this.signInFromButton().then((ok) => ok && location.reload()) },
          "Sign in again",
        ),
      );
    } else if (problem.action === "switch-chain") {
      // The chain the signature was for (the agent's network's), else the first network's.
      const want = this.config.networks.find((n) => err instanceof WrongChainError && n.chainIdHex === err.expected) ?? this.network();
      actions.push(h("button", { type: "button", onclick: () => this.switchChain(want.name) }, `Switch to ${chainLabel(want.chainIdHex)}`));
    } else if (problem.action === "reload") {
      actions.push(h("button", { type: "button", onclick: () => location.reload() }, "Reload the page"));
    }
    // No wallet in a sandbox: its own test key, if the owner wants it.
    if (problem.kind === "wallet-missing" && this.sandbox) actions.push(this.sandboxButton("Use a sandbox wallet instead"));
    const box = h(
      "div",
      { class: "problem", "data-kind": problem.kind },
      h("p", { class: "problem-title" }, h("strong", null, problem.title)),
      h("p", null, problem.detail),
      h("div", { class: "actions" }, actions, h("button", { type: "button", class: "link", onclick: () => box.remove() }, "Dismiss")),
    );
    replace(byId("alerts"), box);
    box.scrollIntoView?.({ block: "nearest" });
    return problem;
  }

  /** A confirmation at the top of the page (also announced). */
  notify(message: string, ...extra: (Node | string)[]): void {
    const box = h("div", { class: "notice", "data-kind": "success" }, h("p", null, message, ...extra));
    replace(byId("alerts"), box);
    announce(message);
  }

  /** The network of the service the wallet is on, or the first one. */
  private async walletNetwork(wallet: Wallet): Promise<DashboardNetwork> {
    const current = await wallet.chainId().catch(() => "");
    return this.config.networks.find((n) => n.chainIdHex === current) ?? this.config.networks[0];
  }

  async switchChain(network?: string): Promise<void> {
    try {
      const wallet = await this.chooseWallet();
      const target = this.network(network);
      await wallet.ensureChain(target);
      this.chainWarning = null;
      this.clearAlerts();
      this.renderAccount();
      announce(`Your wallet is on ${chainLabel(target.chainIdHex)}.`);
    } catch (err) {
      this.report(err, "switch networks");
    }
  }

  /** A link to a transaction on `network`'s explorer (default the first network's). */
  txLink(hash: string | null | undefined, text = "View transaction", network?: string): Node {
    if (!hash) return document.createTextNode("no transaction");
    return explorerLink(`${this.network(network).explorerUrl}/tx/${hash}`, text, hash);
  }

  /** A link to an address on `network`'s explorer (default the first network's). */
  addressLink(address: string, text = address, network?: string): Node {
    return explorerLink(`${this.network(network).explorerUrl}/address/${address}`, text, address);
  }

  renderAccount(): void {
    const el = byId("account");
    const session = this.session();
    if (!session) {
      // The page reloads after signing in so that everything on it is read with the owner key.
      replace(
        el,
        h(
          "button",
          { type: "button", class: "primary", id: "sign-in", onclick: () => this.signInFromButton().then((ok) => ok && location.reload()) },
          "Connect wallet and sign in",
        ),
      );
      return;
    }
    const wrong = this.chainWarning
      ? h(
          "span",
          { class: "badge warn" },
          `Wallet on ${chainLabel(this.chainWarning)} `,
          h("button", { type: "button", class: "link", onclick: () => this.switchChain() }, "Switch network"),
        )
      : null;
    replace(
      el,
      h(
        "span",
        { class: "who", title: session.ownerAddress },
        "Signed in as ",
        h("strong", { "data-owner": session.ownerAddress }, shortAddress(session.ownerAddress)),
        ` with ${session.walletName}`,
      ),
      session.wallet === SANDBOX_RDNS
        ? h("span", { class: "badge warn", id: "sandbox-key", title: SANDBOX_NAME }, "Sandbox key: test money only")
        : null,
      wrong,
      h(
        "button",
        {
          type: "button",
          id: "sign-out",
          onclick: () => {
            this.signOut();
            location.reload();
          },
        },
        "Sign out",
      ),
    );
  }

  /** For pages that need the owner: a sign-in prompt in the page body. */
  signInPrompt(target: HTMLElement, what: string): void {
    replace(
      target,
      h(
        "section",
        { class: "card", "aria-labelledby": "signin-title" },
        h("h2", { id: "signin-title" }, "Sign in to continue"),
        h(
          "p",
          null,
          `Sign in with your wallet to see ${what}. Signing in costs nothing: your wallet signs a one-time message (Sign-In with Ethereum) and this tab keeps the resulting key until you close it.`,
        ),
        h(
          "div",
          { class: "actions" },
          h(
            "button",
            { type: "button", class: "primary", onclick: () => this.signInFromButton().then((ok) => ok && location.reload()) },
            "Connect wallet and sign in",
          ),
          this.sandboxButton(),
        ),
      ),
    );
  }

  /** In a sandbox: sign in with the sandbox wallet (no browser wallet needed), with what it is said beside it. */
  sandboxButton(label = "Use a sandbox wallet"): HTMLElement | null {
    if (!this.sandbox) return null;
    return h(
      "div",
      { class: "sandbox-choice" },
      h(
        "button",
        { type: "button", class: "sandbox-sign-in", onclick: () => this.signInFromButton(true).then((ok) => ok && location.reload()) },
        label,
      ),
      h("p", { class: "hint" }, SANDBOX_HINT),
    );
  }
}

function explorerLink(href: string, text: string, full: string): HTMLAnchorElement {
  return h(
    "a",
    { href, target: "_blank", rel: "noopener noreferrer", class: "explorer", title: full },
    text,
    h("span", { class: "visually-hidden" }, " (opens the block explorer in a new tab)"),
  );
}
