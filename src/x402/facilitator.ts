/**
 * The x402 facilitator the service talks to: the real x402 v2 facilitator in-process (its own key, settling on our
 * RPC) or a remote one over HTTP (FACILITATOR_URL: POST /verify, POST /settle, GET /supported). Both answer with
 * the x402 types; refusals are values (`isValid: false`, `success: false`), never exceptions. Exceptions mean the
 * facilitator or the chain could not be reached.
 */
import { type PendingSettlementStore, x402Facilitator } from "@x402/core/facilitator";
import { HTTPFacilitatorClient } from "@x402/core/http";
import type {
  SettleError,
  VerifyError,
  PaymentPayload,
  PaymentPayloadV1,
  PaymentRequirements,
  PaymentRequirementsV1,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from "@x402/core/types";
import { toFacilitatorEvmSigner, type FacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/facilitator";
import { NETWORKS as V1_NETWORKS } from "@x402/evm/v1";
import type { Abi } from "viem" with { "resolution-mode": "import" };
import { chainIdOfX402Network } from "../chain/networks";
import { viem, walletClientFor } from "../chain/viem";
import { ReceiptWatcher } from "../chain/receipts";
import { facilitatorSends } from "./facilitatorSends";

export type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse };
export type AnyPaymentPayload = PaymentPayload | PaymentPayloadV1;
export type AnyPaymentRequirements = PaymentRequirements | PaymentRequirementsV1;

/** What the service needs from a facilitator, in-process or remote. v1 payloads are accepted too. */
export interface Facilitator {
  verify(payload: AnyPaymentPayload, requirements: AnyPaymentRequirements): Promise<VerifyResponse>;
  settle(payload: AnyPaymentPayload, requirements: AnyPaymentRequirements): Promise<SettleResponse>;
  supported(): Promise<SupportedResponse>;
}

/** The in-process facilitator also tells the address it settles from (it needs ETH for gas). */
export interface InProcessFacilitator extends Facilitator {
  readonly address: `0x${string}`;
}

export interface InProcessFacilitatorConfig {
  rpcUrl: string;
  chainId: number;
  privateKey: string;
  /** Bound on each receipt wait; past it settle answers `settlement_pending` with the tx hash. Default 60 000. */
  confirmationTimeoutMs?: number;
  /** Gas limit of every settlement transaction (and of the simulations that clear it). Default SETTLE_GAS_LIMIT. */
  settleGasLimit?: bigint;
  /**
   * Settlements broadcast and not yet confirmed, shared by every instance (MongoPendingSettlementStore): a retried
   * settle reconciles against the transaction already sent. Default: the stock in-memory store of one process.
   */
  pendingSettlements?: PendingSettlementStore;
}

/**
 * Gas limit of a settlement. USDC's transferWithAuthorization used 76,552 gas here with an agent wallet's ERC-1271
 * signature and 68,682 with an EOA's (`npm run bench:gas`); the limit leaves room for heavier contract wallets
 * (multisig owners, P-256 verified in Solidity). It also bounds what a payer's wallet can make the facilitator burn:
 * only what is used is paid, and a settlement that needs more is refused by the simulation before it is sent.
 */
export const SETTLE_GAS_LIMIT = 500_000n;

export const UNSUPPORTED_NETWORK = "invalid_network";

/** Runs sends one at a time so nonces are taken in order (estimation failures reset viem's nonce manager). */
function serial() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

/**
 * The scheme asks for the payer's and the token's code on every verify and again on settle. Deployed code is kept:
 * since Cancun it can no longer change (SELFDESTRUCT only clears code in its creation transaction). No code and an
 * EIP-7702 delegation (0xef0100 + address, which its EOA can change at any time) are asked for each time.
 */
export function contractCodeCache(
  getCode: (address: `0x${string}`) => Promise<`0x${string}` | undefined>,
  max = 10_000,
): (address: `0x${string}`) => Promise<`0x${string}` | undefined> {
  const codes = new Map<string, `0x${string}`>();
  return async (address) => {
    const key = address.toLowerCase();
    const known = codes.get(key);
    if (known) return known;
    const code = await getCode(address);
    if (code && code !== "0x" && !code.toLowerCase().startsWith("0xef0100")) {
      if (codes.size >= max) codes.clear();
      codes.set(key, code);
    }
    return code;
  };
}

interface ReadArgs {
  address: `0x${string}`;
  abi: readonly unknown[];
  functionName: string;
  args?: readonly unknown[];
}

const ERC1271_MAGIC = "0x1626ba7e";

/**
 * The scheme asks a contract payer's wallet for its ERC-1271 answer in verify and again in settle, moments apart. A
 * valid answer is kept for the one ask that follows within `ttlMs` (the settle after a verify); anything else is asked
 * of the chain. The settlement stays checked on chain: its simulation just before the send runs the same ERC-1271
 * check inside USDC (FiatToken v2.2), so a wallet that changed its answer in between is refused, not paid.
 */
export function reusedSignatureChecks(ttlMs = 30_000, max = 10_000) {
  const kept = new Map<string, { at: number; answer: unknown }>();
  return async (args: ReadArgs, read: (args: ReadArgs) => Promise<unknown>): Promise<unknown> => {
    const key = `${args.address.toLowerCase()}:${(args.args ?? []).map(String).join(":")}`;
    const hit = kept.get(key);
    if (hit) {
      kept.delete(key);
      if (Date.now() - hit.at <= ttlMs) return hit.answer;
    }
    const answer = await read(args);
    if (typeof answer === "string" && answer.toLowerCase().startsWith(ERC1271_MAGIC)) {
      if (kept.size >= max) kept.clear();
      kept.set(key, { at: Date.now(), answer });
    }
    return answer;
  };
}

/** Functions whose reads are simulated settlements: run with the settlement's gas limit, so verify accepts what settle can send. */
const SETTLEMENT_CALLS = new Set(["transferWithAuthorization", "receiveWithAuthorization", "settle", "settleWithPermit"]);

/** The real x402 facilitator (exact EVM scheme, v2 `eip155:<chainId>` and v1 names) settling with its own key. */
export function createInProcessFacilitator(cfg: InProcessFacilitatorConfig): InProcessFacilitator {
  const client = walletClientFor(cfg.privateKey, cfg.rpcUrl, cfg.chainId);
  const queue = serial();
  const codeOf = contractCodeCache((address) => client.getCode({ address }));
  const send = facilitatorSends(client);
  const gasLimit = cfg.settleGasLimit ?? SETTLE_GAS_LIMIT;
  const signatureChecks = reusedSignatureChecks();
  const read = (args: ReadArgs) =>
    client.readContract({
      address: args.address,
      abi: args.abi as Abi,
      functionName: args.functionName,
      args: args.args ?? [],
      ...(SETTLEMENT_CALLS.has(args.functionName) ? { gas: gasLimit } : {}),
    });
  const receipts = new ReceiptWatcher((method, params) => client.request({ method, params } as never));
  const evmSigner: FacilitatorEvmSigner = toFacilitatorEvmSigner(
    {
      address: client.account.address,
      readContract: (args) => (args.functionName === "isValidSignature" ? signatureChecks(args, read) : read(args)),
      verifyTypedData: (args) =>
        client.verifyTypedData({
          address: args.address,
          domain: args.domain,
          types: args.types,
          primaryType: args.primaryType,
          message: args.message,
          signature: args.signature,
        } as Parameters<typeof client.verifyTypedData>[0]),
      // A gas limit instead of viem's estimate, which had no bound: a payer's ERC-1271 wallet could make a settlement as
      // costly as it liked. What the estimate refused is refused by one simulation with that limit, inside the queue so
      // it meets the state the settlement will (this key's earlier sends included); its error names the revert as before.
      writeContract: (args) =>
        queue(async () => {
          const call = {
            address: args.address,
            abi: args.abi as Abi,
            functionName: args.functionName,
            args: args.args,
            gas: args.gas ?? gasLimit,
            dataSuffix: args.dataSuffix,
          };
          await client.call({
            to: call.address,
            data: `${viem.encodeFunctionData(call)}${(call.dataSuffix ?? "0x").slice(2)}`,
            gas: call.gas,
          });
          return send((o) => client.writeContract({ ...call, ...o }));
        }),
      sendTransaction: (args) => queue(() => send((o) => client.sendTransaction({ to: args.to, data: args.data, ...o }))),
      // One watch loop for all settlements (receipts.ts), not viem's 1 s block watch: noticed within a twentieth of a second.
      waitForTransactionReceipt: async (args) => {
        const receipt = await receipts.wait(
          args.hash,
          () =>
            client.getTransactionReceipt({ hash: args.hash }).catch((err: unknown) => {
              if ((err as Error).name === "TransactionReceiptNotFoundError") return null;
              throw err;
            }),
          args.timeout ?? cfg.confirmationTimeoutMs ?? 60_000,
        );
        if (!receipt) throw new Error(`timed out waiting for the receipt of ${args.hash}`);
        return receipt;
      },
      getCode: (args) => codeOf(args.address),
    },
    { confirmationTimeoutMs: cfg.confirmationTimeoutMs ?? 60_000 },
  );
  const facilitator = new x402Facilitator();
  // As registerExactEvmScheme does, with the pending store given to the v2 scheme (x402 v1's keeps none).
  facilitator.register(`eip155:${cfg.chainId}`, new ExactEvmScheme(evmSigner, { pendingSettlementStore: cfg.pendingSettlements }));
  // x402 v1 names networks by name ("base"), which the registration's CAIP-2 type does not spell.
  facilitator.registerV1(V1_NETWORKS as unknown as `${string}:${string}`[], new ExactEvmSchemeV1(evmSigner));

  // Every v1 network name is registered with the same signer; refuse other chains here so a payload for another
  // chain is never simulated or settled on ours.
  const onOurChain = (req: AnyPaymentRequirements) => chainIdOfX402Network(req.network) === cfg.chainId;
  const payerOf = (payload: AnyPaymentPayload): string | undefined => {
    const auth = (payload.payload as { authorization?: { from?: unknown } }).authorization;
    return typeof auth?.from === "string" ? auth.from : undefined;
  };

  return {
    address: client.account.address,
    async verify(payload, requirements) {
      if (!onOurChain(requirements)) {
        return { isValid: false, invalidReason: UNSUPPORTED_NETWORK, payer: payerOf(payload) };
      }
      return facilitator.verify(payload as PaymentPayload, requirements as PaymentRequirements);
    },
    async settle(payload, requirements) {
      if (!onOurChain(requirements)) {
        return {
          success: false,
          errorReason: UNSUPPORTED_NETWORK,
          transaction: "",
          network: requirements.network,
          payer: payerOf(payload),
        };
      }
      return facilitator.settle(payload as PaymentPayload, requirements as PaymentRequirements);
    },
    supported: () =>
      Promise.resolve().then(() => {
        const all = facilitator.getSupported();
        const kinds = all.kinds.filter((k) => chainIdOfX402Network(k.network) === cfg.chainId);
        return { ...all, kinds: kinds as SupportedResponse["kinds"] };
      }),
  };
}

// @x402/core bundles each entry point separately, so the VerifyError thrown by @x402/core/http is not the class
// exported by @x402/core/types: recognise them by name.
const isVerifyError = (err: unknown): err is VerifyError => err instanceof Error && err.name === "VerifyError";
const isSettleError = (err: unknown): err is SettleError => err instanceof Error && err.name === "SettleError";

/** A remote facilitator over HTTP; a non-2xx answer carrying a verify/settle result is returned as that result. */
export function createRemoteFacilitator(cfg: { url: string; timeoutMs?: number }): Facilitator {
  const http = new HTTPFacilitatorClient({ url: cfg.url, timeoutMs: cfg.timeoutMs ?? 15_000 });
  return {
    async verify(payload, requirements) {
      try {
        return await http.verify(payload as PaymentPayload, requirements as PaymentRequirements);
      } catch (err) {
        if (isVerifyError(err)) {
          return { isValid: false, invalidReason: err.invalidReason, invalidMessage: err.invalidMessage, payer: err.payer };
        }
        throw err;
      }
    },
    async settle(payload, requirements) {
      try {
        return await http.settle(payload as PaymentPayload, requirements as PaymentRequirements);
      } catch (err) {
        if (isSettleError(err)) {
          return {
            success: false,
            errorReason: err.errorReason,
            errorMessage: err.errorMessage,
            payer: err.payer,
            transaction: err.transaction,
            network: err.network,
          };
        }
        throw err;
      }
    },
    supported: () => http.getSupported(),
  };
}

/**
 * `url` set: the remote facilitator at that URL. Otherwise the in-process one, which needs `privateKey` (its own
 * key: two senders on one key race for the account nonce).
 */
export function createFacilitator(cfg: {
  url?: string;
  rpcUrl: string;
  chainId: number;
  privateKey?: string;
  timeoutMs?: number;
  pendingSettlements?: PendingSettlementStore;
}): Facilitator {
  if (cfg.url) return createRemoteFacilitator({ url: cfg.url, timeoutMs: cfg.timeoutMs });
  if (!cfg.privateKey) throw new Error("createFacilitator: privateKey is required for the in-process facilitator");
  const { rpcUrl, chainId, privateKey, pendingSettlements } = cfg;
  return createInProcessFacilitator({ rpcUrl, chainId, privateKey, pendingSettlements });
}
