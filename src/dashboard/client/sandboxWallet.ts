/**
 * The sandbox wallet: in embedded mode only, and only when the owner asks for it, a key generated in this page and
 * kept in the tab's sessionStorage (gone with the tab), so the dashboard works without a browser wallet. It is an
 * EIP-1193 provider like any other wallet, signing what the dashboard asks (SIWE, EIP-712) without a prompt: a key for
 * the sandbox's test money, labelled so wherever it shows. When the service is no sandbox (GET /dashboard/config: mode
 * "production") it is never offered or read, and a sandbox key left by an earlier sandbox on this origin is deleted.
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { DashboardConfig } from "./api";
import type { Eip1193Provider, WalletEntry } from "./wallet";

const KEY = "spendgate.sandboxKey";
export const SANDBOX_RDNS = "org.spendgate.sandbox";
export const SANDBOX_NAME = "Sandbox wallet (a test key kept in this tab)";

/** An EIP-1193 error, as wallets throw them (4001 rejected, 4100 unauthorised, 4200 unsupported, 4902 unknown chain). */
const failure = (code: number, message: string) => Object.assign(new Error(message), { code });

function storedKey(): `0x${string}` | null {
  const key = sessionStorage.getItem(KEY);
  return key && /^0x[0-9a-f]{64}$/.test(key) ? (key as `0x${string}`) : null;
}

/**
 * The sandbox wallet of this tab: its stored key, or a new one when `create` (the owner chose it). Null when there is
 * no key and none is to be made; outside embedded mode, none (any stored key deleted; asked to make one, it throws).
 */
export function sandboxWallet(config: DashboardConfig, create: true): WalletEntry;
export function sandboxWallet(config: DashboardConfig, create: boolean): WalletEntry | null;
export function sandboxWallet(config: DashboardConfig, create: boolean): WalletEntry | null {
  if (config.mode !== "embedded") {
    sessionStorage.removeItem(KEY);
    if (create) throw new Error("There is no sandbox wallet outside a sandbox.");
    return null;
  }
  let key = storedKey();
  if (!key && !create) return null;
  if (!key) {
    key = generatePrivateKey();
    sessionStorage.setItem(KEY, key);
  }
  const account = privateKeyToAccount(key);
  const own = (address: unknown) => typeof address === "string" && address.toLowerCase() === account.address.toLowerCase();
  let chainIdHex = config.networks[0].chainIdHex;
  const listeners = new Map<string, ((...args: unknown[]) => void)[]>();

  const provider: Eip1193Provider = {
    async request({ method, params }) {
      const p = (params ?? []) as unknown[];
      switch (method) {
        case "eth_chainId":
          return chainIdHex;
        case "eth_accounts":
        case "eth_requestAccounts":
          return [account.address];
        case "wallet_switchEthereumChain": {
          // It knows the service's networks only: the sandbox chains its key is for.
          const want = ((p[0] as { chainId?: string } | undefined)?.chainId ?? "").toLowerCase();
          if (!config.networks.some((n) => n.chainIdHex === want)) throw failure(4902, `Unrecognized chain ID "${want}".`);
          chainIdHex = want;
          for (const fn of listeners.get("chainChanged") ?? []) fn(want);
          return null;
        }
        case "personal_sign": {
          const [message, address] = p as [`0x${string}`, string];
          if (!own(address)) throw failure(4100, "The sandbox wallet holds another account.");
          return account.signMessage({ message: { raw: message } });
        }
        case "eth_signTypedData_v4": {
          const [address, json] = p as [string, string];
          if (!own(address)) throw failure(4100, "The sandbox wallet holds another account.");
          const data = JSON.parse(json) as {
            domain: { name?: string; version?: string; chainId?: number | string; verifyingContract?: `0x${string}` };
            types: Record<string, { name: string; type: string }[]>;
            primaryType: string;
            message: Record<string, unknown>;
          };
          // As a wallet does: a signature for another chain than the one it is on is refused.
          if (data.domain.chainId !== undefined && Number(data.domain.chainId) !== Number(BigInt(chainIdHex)))
            throw failure(
              -32603,
              `Provided chainId "${data.domain.chainId}" must match the active chainId "${Number(BigInt(chainIdHex))}"`,
            );
          const { EIP712Domain: _domain, ...types } = data.types;
          const { chainId, ...rest } = data.domain;
          const domain = { ...rest, ...(chainId === undefined ? {} : { chainId: Number(chainId) }) };
          return account.signTypedData({ domain, types, primaryType: data.primaryType, message: data.message });
        }
        default:
          throw failure(4200, `The sandbox wallet does not support ${method}.`);
      }
    },
    on(event, fn) {
      listeners.set(event, [...(listeners.get(event) ?? []), fn]);
    },
  };
  return { info: { uuid: "sandbox", name: SANDBOX_NAME, icon: "", rdns: SANDBOX_RDNS }, provider };
}
