/**
 * A test wallet: an EIP-1193 provider injected into the page (announced with EIP-6963 and, optionally, set as
 * window.ethereum) whose requests are answered here in the test process by an ethers Wallet. It behaves like a real
 * wallet where the dashboard depends on it: it refuses to sign typed data for another chain than its own, knows only
 * some chains, emits chainChanged, and can be told to reject (EIP-1193 error 4001).
 */
import { Wallet, getBytes, isHexString, toUtf8String } from "ethers";
import type { Page } from "playwright-core";

export interface WalletCall {
  method: string;
  params: unknown[];
}

interface Answer {
  result?: unknown;
  error?: { code: number; message: string };
  events?: { event: string; data: unknown }[];
}

const ICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 8 8'%3E%3Ccircle cx='4' cy='4' r='4' fill='%230b57d0'/%3E%3C/svg%3E";

export class TestWallet {
  chainId: number;
  readonly known: Set<number>;
  connected = false;
  /** Methods whose next call is rejected by the user (4001). */
  readonly rejectNext = new Set<string>();
  /** The user declines every network switch (4001). */
  refuseSwitch = false;
  readonly calls: WalletCall[] = [];
  /** Typed data the wallet signed (as the page sent it). */
  readonly typedSigned: { primaryType: string; json: string }[] = [];
  readonly messagesSigned: string[] = [];

  constructor(
    readonly signer: Wallet,
    readonly name = "Test Wallet",
    readonly rdns = "org.spendgate.test-wallet",
    opts: { chainId?: number; knownChains?: number[] } = {},
  ) {
    this.chainId = opts.chainId ?? 8453;
    this.known = new Set(opts.knownChains ?? [1, 8453]);
  }

  get address(): string {
    return this.signer.address;
  }

  callsOf(method: string): WalletCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  private rejected(method: string): Answer | null {
    if (!this.rejectNext.has(method)) return null;
    this.rejectNext.delete(method);
    return { error: { code: 4001, message: "User rejected the request." } };
  }

  private own(address: unknown): boolean {
    return typeof address === "string" && address.toLowerCase() === this.address.toLowerCase();
  }

  async handle(method: string, params: unknown[]): Promise<Answer> {
    this.calls.push({ method, params });
    const hex = `0x${this.chainId.toString(16)}`;
    switch (method) {
      case "eth_chainId":
        return { result: hex };
      case "eth_accounts":
        return { result: this.connected ? [this.address.toLowerCase()] : [] };
      case "eth_requestAccounts": {
        const r = this.rejected(method);
        if (r) return r;
        this.connected = true;
        return { result: [this.address.toLowerCase()] };
      }
      case "wallet_switchEthereumChain": {
        const target = Number(BigInt((params[0] as { chainId: string }).chainId));
        if (this.refuseSwitch) return { error: { code: 4001, message: "User rejected the request." } };
        if (!this.known.has(target))
          return {
            error: {
              code: 4902,
              message: `Unrecognized chain ID "0x${target.toString(16)}". Try adding the chain using wallet_addEthereumChain first.`,
            },
          };
        this.chainId = target;
        return { result: null, events: [{ event: "chainChanged", data: `0x${target.toString(16)}` }] };
      }
      case "wallet_addEthereumChain": {
        const r = this.rejected(method);
        if (r) return r;
        const target = Number(BigInt((params[0] as { chainId: string }).chainId));
        this.known.add(target);
        this.chainId = target;
        return { result: null, events: [{ event: "chainChanged", data: `0x${target.toString(16)}` }] };
      }
      case "personal_sign": {
        const [message, address] = params as [string, string];
        if (!this.connected || !this.own(address))
          return { error: { code: 4100, message: "The requested account has not been authorized." } };
        const r = this.rejected(method);
        if (r) return r;
        const bytes = isHexString(message) ? getBytes(message) : new TextEncoder().encode(message);
        this.messagesSigned.push(toUtf8String(bytes));
        return { result: await this.signer.signMessage(bytes) };
      }
      case "eth_signTypedData_v4": {
        const [address, json] = params as [string, string];
        if (!this.connected || !this.own(address))
          return { error: { code: 4100, message: "The requested account has not been authorized." } };
        const data = JSON.parse(json) as {
          domain: { chainId?: number | string };
          types: Record<string, { name: string; type: string }[]>;
          primaryType: string;
          message: Record<string, unknown>;
        };
        if (data.domain.chainId !== undefined && Number(data.domain.chainId) !== this.chainId) {
          return {
            error: { code: -32603, message: `Provided chainId "${data.domain.chainId}" must match the active chainId "${this.chainId}"` },
          };
        }
        const r = this.rejected(method);
        if (r) return r;
        const { EIP712Domain: _domainType, ...types } = data.types;
        const signature = await this.signer.signTypedData(data.domain, types, data.message);
        this.typedSigned.push({ primaryType: data.primaryType, json });
        return { result: signature };
      }
      default:
        return { error: { code: 4200, message: `The test wallet does not support ${method}.` } };
    }
  }
}

/** Runs in the page: one EIP-1193 provider per test wallet, announced with EIP-6963. */
const PAGE_PROVIDERS = `function (cfg) {
  const makeProvider = (i) => {
    const listeners = new Map();
    return {
      async request({ method, params }) {
        const answer = await window["__testWallet" + i](method, params ?? []);
        for (const e of answer.events ?? []) for (const fn of listeners.get(e.event) ?? []) fn(e.data);
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        return answer.result;
      },
      on(event, fn) { listeners.set(event, [...(listeners.get(event) ?? []), fn]); },
      removeListener(event, fn) { listeners.set(event, (listeners.get(event) ?? []).filter((f) => f !== fn)); },
    };
  };
  const entries = cfg.wallets.map((w, i) => ({
    info: Object.freeze({ uuid: Date.now().toString(16) + "-" + Math.random().toString(16).slice(2) + "-" + i, name: w.name, icon: w.icon, rdns: w.rdns }),
    provider: makeProvider(i),
  }));
  const announce = () => {
    for (const detail of entries) window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: Object.freeze(detail) }));
  };
  if (cfg.announce) {
    window.addEventListener("eip6963:requestProvider", announce);
    announce();
  }
  if (cfg.legacy !== null) window.ethereum = entries[cfg.legacy].provider;
}`;

/**
 * Injects the wallets into every document the page loads: each announced with EIP-6963 (several side by side); the
 * one at index `legacy` is also window.ethereum (null: none). `announce: false` is an older wallet: window.ethereum only.
 */
export async function installWallets(
  page: Page,
  wallets: TestWallet[],
  legacy: number | null = 0,
  opts: { announce?: boolean } = {},
): Promise<void> {
  for (const [i, w] of wallets.entries()) {
    await page.exposeFunction(`__testWallet${i}`, (method: string, params: unknown[]) => w.handle(method, params ?? []));
  }
  const cfg = { wallets: wallets.map((w) => ({ name: w.name, rdns: w.rdns, icon: ICON })), legacy, announce: opts.announce ?? true };
  // A string, not a function: the test runner's transpiler would add helpers the page does not have.
  await page.addInitScript(`(${PAGE_PROVIDERS})(${JSON.stringify(cfg)});`);
}
