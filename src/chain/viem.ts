/**
 * viem clients bound to one explicit RPC URL. Never use viem's built-in chain objects (`base`, `baseSepolia`) or
 * `http()` without a URL here: they point at the public Base RPC.
 */
import type { Chain, HttpTransport, PrivateKeyAccount, PublicActions, WalletClient } from "viem" with {
  "resolution-mode": "import",
};

// viem ships CommonJS builds but marks its type declarations as ESM, so under `module: node16` TypeScript refuses a
// static import from this CommonJS project. require() loads viem's CJS build; the types come from the ESM typings.
type Viem = typeof import("viem", { with: { "resolution-mode": "import" } });
type ViemAccounts = typeof import("viem/accounts", { with: { "resolution-mode": "import" } });
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const viem: Viem = require("viem");
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const viemAccounts: ViemAccounts = require("viem/accounts");
const { createWalletClient, defineChain, nonceManager, publicActions } = viem;
const { privateKeyToAccount } = viemAccounts;

import { SigningKey } from "ethers";
import { signDigest } from "./ecdsa";
import { MULTICALL3_ADDRESS, networkOfChainId } from "./networks";
import { nodeHttpTransport } from "./rpc/rpcTransport";

export interface TransportOptions {
  /**
   * viem retries JSON-RPC -32603 errors, and Hardhat reports every revert as -32603: a reverted call would take
   * about 1 s. Default 0.
   */
  retryCount?: number;
  /** Per-request timeout in ms. Default 10 000. */
  timeout?: number;
}

/** A viem chain whose only RPC URL is `rpcUrl` (plus the canonical Multicall3, on every network of the table and embedded). */
export function viemChain(chainId: number, rpcUrl: string): Chain {
  const known = networkOfChainId(chainId);
  return defineChain({
    id: chainId,
    name: known?.displayName ?? `Chain ${chainId}`,
    nativeCurrency: known?.nativeCurrency ?? { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
  });
}

function transportFor(rpcUrl: string, opts: TransportOptions = {}): HttpTransport {
  return nodeHttpTransport(viem, rpcUrl, { retryCount: opts.retryCount ?? 0, timeout: opts.timeout ?? 10_000 });
}

export type SignerClient = WalletClient<HttpTransport, Chain, PrivateKeyAccount> & PublicActions<HttpTransport, Chain>;

/**
 * viem's private-key account (with its nonce manager), whose signatures are made by src/chain/ecdsa.ts: the same bytes
 * (viem signs with RFC 6979 and low s, no extra entropy), through libsecp256k1's binding where @noble/curves takes
 * about 1 ms a signature in JavaScript (the facilitator signs every settlement it sends). test/chain/viemAccount.test.ts
 * holds the two equal.
 */
export function nativeSigningAccount(privateKey: `0x${string}`): PrivateKeyAccount {
  const account = privateKeyToAccount(privateKey, { nonceManager });
  const key = new SigningKey(privateKey);
  const hex = (digest: string) => signDigest(key, digest).serialized as `0x${string}`;
  return {
    ...account,
    sign: ({ hash }) => Promise.resolve(hex(hash)),
    signMessage: ({ message }) => Promise.resolve(hex(viem.hashMessage(message))),
    signTypedData: (typedData) => Promise.resolve(hex(viem.hashTypedData(typedData as Parameters<typeof viem.hashTypedData>[0]))),
    // As viem's signTransaction: the digest of the serialised transaction (an EIP-4844 one without its sidecars).
    signTransaction: async (transaction, options) => {
      const serializer = options?.serializer ?? viem.serializeTransaction;
      const signable = transaction.type === "eip4844" ? { ...transaction, sidecars: false as const } : transaction;
      const sig = signDigest(key, viem.keccak256(await serializer(signable)));
      return serializer(transaction, {
        r: sig.r as `0x${string}`,
        s: sig.s as `0x${string}`,
        v: sig.yParity ? 28n : 27n,
        yParity: sig.yParity,
      });
    },
  };
}

/**
 * A wallet client (with public actions) for a private key. The account uses viem's nonce manager, so concurrent
 * sends from one key get consecutive nonces.
 */
export function walletClientFor(privateKey: string, rpcUrl: string, chainId: number, opts?: TransportOptions): SignerClient {
  const account = nativeSigningAccount(privateKey as `0x${string}`);
  return createWalletClient({
    account,
    chain: viemChain(chainId, rpcUrl),
    transport: transportFor(rpcUrl, opts),
    pollingInterval: 1_000,
  }).extend(publicActions);
}
