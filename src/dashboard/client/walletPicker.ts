/** The wallet picker (EIP-6963): which of the browser's wallets, or the sandbox's, signs for the owner. */
import { byId, h, replace } from "./dom";
import { SANDBOX_NAME, SANDBOX_RDNS } from "./sandboxWallet";
import type { WalletEntry } from "./wallet";

/** The owner closed the wallet picker: not an error, nothing to show. */
export class CancelledError extends Error {
  constructor() {
    super("cancelled");
    this.name = "CancelledError";
  }
}

export const SANDBOX_HINT =
  "Sandbox only: a new key is made in this page and kept in this tab until you close it. It signs without asking; never send it real funds.";

/** The EIP-6963 choice: a modal dialog listing every wallet (and the sandbox's); Escape or Cancel closes it. */
export function pickWallet(wallets: WalletEntry[], offerSandbox: boolean): Promise<WalletEntry | "sandbox"> {
  const dialog = byId<HTMLDialogElement>("wallet-picker");
  return new Promise((resolve, reject) => {
    let chosen: WalletEntry | "sandbox" | null = null;
    const close = () => dialog.close();
    replace(
      dialog,
      h("h2", { id: "wallet-picker-title" }, "Choose a wallet"),
      h("p", null, "Several wallets are installed in this browser. Pick the one that holds your owner account."),
      h(
        "ul",
        { class: "wallet-list" },
        wallets.map((w) =>
          h(
            "li",
            null,
            h(
              "button",
              {
                type: "button",
                class: "wallet-option",
                "data-rdns": w.info.rdns,
                onclick: () => {
                  chosen = w;
                  close();
                },
              },
              w.info.icon.startsWith("data:image/") ? h("img", { src: w.info.icon, alt: "", width: 24, height: 24 }) : null,
              w.info.name,
            ),
          ),
        ),
        offerSandbox
          ? h(
              "li",
              null,
              h(
                "button",
                {
                  type: "button",
                  class: "wallet-option",
                  "data-rdns": SANDBOX_RDNS,
                  "aria-describedby": "sandbox-hint",
                  onclick: () => {
                    chosen = "sandbox";
                    close();
                  },
                },
                SANDBOX_NAME,
              ),
              h("p", { class: "hint", id: "sandbox-hint" }, SANDBOX_HINT),
            )
          : null,
      ),
      h("button", { type: "button", onclick: close }, "Cancel"),
    );
    dialog.addEventListener("close", () => (chosen ? resolve(chosen) : reject(new CancelledError())), { once: true });
    dialog.showModal();
  });
}
