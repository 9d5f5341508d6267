/**
 * Injected wallets: discovery with EIP-6963 (several wallets side by side) and the legacy window.ethereum, the
 * network check and switch, and the two kinds of signatures the dashboard asks for (EIP-712 v4 and personal_sign).
 */
import { networkOfChainId } from "../../chain/networks";
import type { DashboardConfig, DashboardNetwork } from "./api";

export interface Eip1193Provider {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
  on?(event: string, listener: (...args: unknown[]) => void): void;
  removeListener?(event: string, listener: (...args: unknown[]) => void): void;
}

export interface WalletInfo {
  uuid: string;
  name: string;
  /** A data: URL (EIP-6963); anything else is not shown. */
  icon: string;
  rdns: string;
}

export interface WalletEntry {
  info: WalletInfo;
  provider: Eip1193Provider;
}

declare global {
  interface Window {
    ethereum?: Eip1193Provider;
  }
}

/** No injected wallet at all. */
export class WalletMissingError extends Error {
  constructor() {
    super("No browser wallet was found.");
    this.name = "WalletMissingError";
  }
}

/** The wallet is on another chain and could not be switched. */
export class WrongChainError extends Error {
  constructor(
    readonly current: string,
    readonly expected: string,
    readonly why: "rejected" | "unknown" | "unsupported" | "unchanged",
  ) {
    super(`The wallet is on chain ${current}, not ${expected}.`);
    this.name = "WrongChainError";
  }
}

/** The wallet's selected account is not the signed-in owner. */
export class WrongAccountError extends Error {
  constructor(
    readonly current: string | null,
    readonly expected: string,
  ) {
    super(`The wallet's account is ${current ?? "none"}, not ${expected}.`);
    this.name = "WrongAccountError";
  }
}

/** An error as the wallet reported it (EIP-1193: 4001 rejected, 4100 unauthorised, 4200 unsupported, -32002 busy). */
export class WalletRequestError extends Error {
  constructor(
    readonly code: number | undefined,
    message: string,
    readonly method: string,
  ) {
    super(message);
    this.name = "WalletRequestError";
  }
}

export function chainLabel(hex: string): string {
  try {
    const id = Number(BigInt(hex));
    const name = networkOfChainId(id)?.displayName;
    return name ? `${name} (chain ${id})` : `chain ${id}`;
  } catch {
    return `chain ${hex}`;
  }
}

const announced = new Map<string, WalletEntry>();

function isEntry(detail: unknown): detail is WalletEntry {
  const d = detail as WalletEntry | undefined;
  return !!d && typeof d.info?.uuid === "string" && typeof d.info?.name === "string" && typeof d.provider?.request === "function";
}

window.addEventListener("eip6963:announceProvider", (event) => {
  const detail = (event as CustomEvent<unknown>).detail;
  if (isEntry(detail)) announced.set(detail.info.uuid, detail);
});

/** Every injected wallet: EIP-6963 announcements, then window.ethereum when it is not one of them. */
export async function discoverWallets(waitMs = 150): Promise<WalletEntry[]> {
  window.dispatchEvent(new Event("eip6963:requestProvider"));
  await new Promise((r) => setTimeout(r, waitMs));
  const list = [...announced.values()];
  const legacy = window.ethereum;
  if (legacy && typeof legacy.request === "function" && !list.some((w) => w.provider === legacy)) {
    list.push({ info: { uuid: "legacy", name: "Browser wallet (window.ethereum)", icon: "", rdns: "legacy" }, provider: legacy });
  }
  return list;
}

function errorCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; data?: { originalError?: { code?: unknown } } };
  const code = e?.code ?? e?.data?.originalError?.code;
  return typeof code === "number" ? code : undefined;
}

function utf8ToHex(text: string): string {
  return `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function normaliseChainId(value: unknown): string {
  try {
    return `0x${BigInt(value as string | number).toString(16)}`;
  } catch {
    return String(value);
  }
}

export class Wallet {
  constructor(
    readonly entry: WalletEntry,
    private readonly config: DashboardConfig,
  ) {}

  get name(): string {
    return this.entry.info.name;
  }

  get id(): string {
    return this.entry.info.rdns || this.entry.info.uuid;
  }

  async request<T>(method: string, params?: unknown): Promise<T> {
    try {
      return (await this.entry.provider.request(params === undefined ? { method } : { method, params })) as T;
    } catch (err) {
      const message = (err as Error)?.message ?? String(err);
      throw new WalletRequestError(errorCode(err), message, method);
    }
  }

  /** Asks the wallet to connect (it may show a prompt); the selected account first. */
  async connect(): Promise<string> {
    const accounts = await this.request<string[]>("eth_requestAccounts");
    if (!accounts?.length) throw new WrongAccountError(null, "an account");
    return accounts[0];
  }

  async chainId(): Promise<string> {
    return normaliseChainId(await this.request<unknown>("eth_chainId"));
  }

  /**
   * Makes sure the wallet is on `network`'s chain (the agent's; default the service's first): switch, or add then
   * switch; WrongChainError when it will not.
   */
  async ensureChain(network: DashboardNetwork = this.config.networks[0]): Promise<void> {
    const want = network.chainIdHex.toLowerCase();
    const current = await this.chainId();
    if (current === want) return;
    try {
      await this.request("wallet_switchEthereumChain", [{ chainId: want }]);
    } catch (err) {
      const e = err as WalletRequestError;
      const unknownChain = e.code === 4902 || /unrecogni[sz]ed chain|unknown chain|not been added|try adding/i.test(e.message);
      if (!unknownChain) throw new WrongChainError(current, want, e.code === 4001 ? "rejected" : "unsupported");
      if (!network.rpcUrl) throw new WrongChainError(current, want, "unknown");
      await this.addChain(current, network, network.rpcUrl);
    }
    if ((await this.chainId()) !== want) throw new WrongChainError(current, want, "unchanged");
  }

  /** wallet_addEthereumChain with the network table's data (name, public RPC, native coin, explorer). */
  private async addChain(current: string, network: DashboardNetwork, rpcUrl: string): Promise<void> {
    const want = network.chainIdHex.toLowerCase();
    try {
      await this.request("wallet_addEthereumChain", [
        {
          chainId: want,
          chainName: network.chainName,
          rpcUrls: [rpcUrl],
          nativeCurrency: network.nativeCurrency,
          ...(this.config.mode === "production" ? { blockExplorerUrls: [network.explorerUrl] } : {}),
        },
      ]);
      // Most wallets switch after adding; the others are asked again.
      if ((await this.chainId()) !== want) await this.request("wallet_switchEthereumChain", [{ chainId: want }]);
    } catch (err) {
      throw new WrongChainError(current, want, (err as WalletRequestError).code === 4001 ? "rejected" : "unsupported");
    }
  }

  /** Throws WrongAccountError unless `owner` is one of the wallet's connected accounts. */
  async ensureAccount(owner: string): Promise<void> {
    let accounts = await this.request<string[]>("eth_accounts");
    if (!accounts?.length) accounts = await this.request<string[]>("eth_requestAccounts");
    if (!accounts.some((a) => a.toLowerCase() === owner.toLowerCase())) throw new WrongAccountError(accounts[0] ?? null, owner);
  }

  /** EIP-712 (eth_signTypedData_v4) with the typed data exactly as given. */
  signTypedData(address: string, typedData: unknown): Promise<string> {
    return this.request<string>("eth_signTypedData_v4", [address, JSON.stringify(typedData)]);
  }

  /** EIP-191 personal_sign of a UTF-8 message (sent hex-encoded, as wallets expect). */
  personalSign(address: string, message: string): Promise<string> {
    return this.request<string>("personal_sign", [utf8ToHex(message), address]);
  }

  on(event: "accountsChanged" | "chainChanged", listener: (...args: unknown[]) => void): void {
    this.entry.provider.on?.(event, listener);
  }
}
