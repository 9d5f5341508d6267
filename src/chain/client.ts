/** The chain module: provider, contracts and the operator's serialised transaction sender. */
import {
  type BaseContract,
  type Interface,
  JsonRpcProvider,
  makeError,
  Network,
  Wallet,
  type ContractRunner,
  type TransactionReceipt,
  type TransactionRequest,
  type TransactionResponse,
  isError,
} from "ethers";
import { MULTICALL3_ADDRESS } from "./addresses";
import { keccakHex } from "./keccak";
import { signCallTx } from "./rpc/callTx";
import { type Bindings, type ReadCall, type ReadResults, addressOf, bind, decodeResult, encodeCall } from "./contracts";
import type { MinedReceipt, RawRpc, RpcObserver } from "./rpc/rawRpc";
import { ReceiptWatcher } from "./receipts";
import { ImmediateJsonRpcProvider } from "./rpc/provider";

export interface ChainOptions {
  rpcUrl: string;
  chainId: number;
  operatorPrivateKey: string;
  factoryAddress: string;
  usdcAddress: string;
  pollingIntervalMs?: number;
  /** Pause between two ticks of the receipt watch (receipts.ts). Default 50. */
  receiptPollMs?: number;
  /** Told of every JSON-RPC call and failure (the service's metrics). */
  rpcObserver?: RpcObserver;
  /** Time limit of one JSON-RPC request (RPC_TIMEOUT_MS); default ethers' 5 minutes. */
  rpcTimeoutMs?: number;
}

/** What the service needs of a sent transaction: its hash (the receipt says the rest). */
export interface SentTx {
  hash: string;
}

export interface TxOverrides {
  nonce: number;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
}

const FEE_TTL_MS = 2_000;

/**
 * Serialises the operator's sends so nonces never collide (mining is not serialised), and caches fee data for two
 * seconds so a payment does not pay three extra RPC round trips for it.
 */
class OperatorSender {
  private tail: Promise<unknown> = Promise.resolve();
  private nextNonce: number | undefined;
  private fees: { at: number; maxFeePerGas?: bigint; maxPriorityFeePerGas?: bigint } | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly wallet: Wallet,
    private readonly provider: JsonRpcProvider,
  ) {}

  private async refreshFees(): Promise<void> {
    const f = await this.provider.getFeeData();
    let { maxFeePerGas, maxPriorityFeePerGas } = f;
    // ethers offers no EIP-1559 fees while the base fee is 0 (the embedded chain): every send then asked for fee data
    // again. The gas price is the priority fee there.
    if (maxFeePerGas === null && f.gasPrice !== null && (await this.provider.getBlock("latest"))?.baseFeePerGas === 0n) {
      maxFeePerGas = maxPriorityFeePerGas = f.gasPrice;
    }
    // Headroom over the current base fee so a transaction survives a few rising blocks.
    this.fees = {
      at: Date.now(),
      maxFeePerGas: maxFeePerGas !== null ? maxFeePerGas * 2n : undefined,
      maxPriorityFeePerGas: maxPriorityFeePerGas ?? undefined,
    };
  }

  private async feeOverrides(): Promise<Omit<TxOverrides, "nonce">> {
    if (!this.fees) await this.refreshFees();
    else if (Date.now() - this.fees.at > FEE_TTL_MS && !this.refreshing) {
      // Refreshed beside the payment, not in front of it (the doubled base fee covers the seconds in between).
      this.refreshing = this.refreshFees()
        .catch(() => undefined)
        .finally(() => (this.refreshing = undefined));
    }
    if (!this.fees) throw new Error("no fee data");
    const { maxFeePerGas, maxPriorityFeePerGas } = this.fees;
    return maxFeePerGas !== undefined && maxPriorityFeePerGas !== undefined ? { maxFeePerGas, maxPriorityFeePerGas } : {};
  }

  send<T extends SentTx>(build: (overrides: TxOverrides) => Promise<T>): Promise<T> {
    const run = this.tail.then(async () => {
      if (this.nextNonce === undefined) {
        this.nextNonce = await this.provider.getTransactionCount(this.wallet.address, "pending");
      }
      for (let attempt = 0; ; attempt++) {
        try {
          const tx = await build({ nonce: this.nextNonce, ...(await this.feeOverrides()) });
          this.nextNonce += 1;
          return tx;
        } catch (err) {
          this.nextNonce = undefined; // unknown whether the nonce was used: ask the node next time
          // Someone else sent from this key (another process given the same key, or whoever stole it): the node says
          // the nonce is taken, so nothing of ours was sent; once more with the node's count, not a 500.
          if (attempt > 0 || !nonceTaken(err)) throw err;
          this.nextNonce = await this.provider.getTransactionCount(this.wallet.address, "pending");
        }
      }
    });
    this.tail = run.catch(() => undefined);
    return run;
  }
}

export class ChainClient {
  readonly provider: JsonRpcProvider;
  readonly operator: Wallet;
  readonly factory: Bindings["SpendPolicyFactory"];
  readonly usdc: Bindings["Usdc"];
  /** Multicall3: its getEthBalance and getBlockNumber join other reads in one call (readMany). */
  readonly multicall: Bindings["Multicall3"];
  /** Bound once per address and runner (all sharing one parsed Interface, see contracts.ts). */
  private readonly policies = new Map<string, Bindings["SpendPolicy"]>();
  private readonly sender: OperatorSender;
  /** Wakes the receipt waits of this client (the service's: authorisations, releases, deployments, settlements). */
  readonly receipts: ReceiptWatcher;
  /** The payment path's calls without ethers' provider machinery, with the provider's errors (rpc/rawRpc.ts). */
  readonly rpc: RawRpc;

  constructor(readonly options: ChainOptions) {
    const network = Network.from(options.chainId);
    const provider = new ImmediateJsonRpcProvider(
      options.rpcUrl,
      network,
      {
        staticNetwork: network,
        batchMaxCount: 1,
        // ethers caches identical reads for 250 ms by default: a getCode just before a deployment would be stale.
        cacheTimeout: -1,
        pollingInterval: options.pollingIntervalMs ?? 1_000,
      },
      options.rpcObserver,
      options.rpcTimeoutMs,
    );
    this.provider = provider;
    this.operator = new Wallet(options.operatorPrivateKey, this.provider);
    this.rpc = provider.raw;
    this.sender = new OperatorSender(this.operator, this.provider);
    this.receipts = new ReceiptWatcher((method, params) => this.rpc.send(method, params), { intervalMs: options.receiptPollMs });
    this.factory = bind("SpendPolicyFactory", options.factoryAddress, this.operator);
    this.usdc = bind("Usdc", options.usdcAddress, this.provider);
    this.multicall = bind("Multicall3", MULTICALL3_ADDRESS, this.provider);
  }

  get chainId(): number {
    return this.options.chainId;
  }

  /** The policy contract at `address`, one object per address and runner, kept (a bounded number) for reuse. */
  policyAt(address: string, runner: ContractRunner = this.operator): Bindings["SpendPolicy"] {
    const key = `${runner === this.operator ? "w" : runner === this.provider ? "r" : "x"}:${address.toLowerCase()}`;
    let c = this.policies.get(key);
    if (!c) {
      c = bind("SpendPolicy", address, runner);
      if (key[0] === "x") return c;
      if (this.policies.size >= 10_000) this.policies.clear();
      this.policies.set(key, c);
    }
    return c;
  }

  /** Sends a transaction from the operator (nonce-serialised); does not wait for it to be mined. */
  sendTx(build: (overrides: TxOverrides) => Promise<TransactionResponse>): Promise<TransactionResponse> {
    return this.sender.send(build);
  }

  /**
   * Signs and broadcasts a call from the operator (nonce-serialised) without ethers' TransactionResponse: that recovers
   * the sender from the signature it just made (about 2 ms of CPU) and asks for the block number beside the send.
   */
  sendCall(contract: BaseContract, method: string, args: unknown[], extra: Omit<TransactionRequest, "nonce"> = {}): Promise<SentTx> {
    return this.sender.send(async (o) => {
      const raw =
        this.signCall(contract, method, args, extra, o) ??
        (await this.operator.signTransaction(
          await this.operator.populateTransaction(await contract.getFunction(method).populateTransaction(...args, { ...extra, ...o })),
        ));
      const hash = keccakHex(raw);
      await this.rpc.send("eth_sendRawTransaction", [raw]).catch((err: unknown) => {
        // A node may refuse a transaction it mined all the same (Hardhat answers a revert so): the hash tells.
        throw Object.assign(err as Error, { transactionHash: hash });
      });
      return { hash };
    });
  }

  /**
   * The receipt of the operator transaction a failed sendCall or waitMined was about, if it was mined: a reverted
   * transaction costs the operator gas all the same.
   */
  async receiptOfFailure(err: unknown): Promise<MinedReceipt | null> {
    const e = err as { receipt?: MinedReceipt; transactionHash?: unknown } | null;
    if (e?.receipt) return e.receipt;
    const hash = e?.transactionHash;
    if (typeof hash !== "string") return null;
    return this.receipts.wait(hash, () => this.minedReceipt(hash), 0).catch(() => null);
  }

  /**
   * The signed EIP-1559 transaction ethers' populate and sign would make (same bytes), built directly: their argument
   * resolution and checks cost about 2.4 ms of CPU per payment. Undefined when ethers would have to ask the node for
   * something (no gas limit, no cached fees) or `extra` holds anything but the gas limit: ethers does it then.
   */
  signCall(
    contract: BaseContract,
    method: string,
    args: unknown[],
    extra: Omit<TransactionRequest, "nonce">,
    o: TxOverrides,
  ): string | undefined {
    const { gasLimit, ...rest } = extra;
    if (gasLimit == null || Object.keys(rest).length || o.maxFeePerGas === undefined || o.maxPriorityFeePerGas === undefined)
      return undefined;
    const tx = {
      chainId: this.options.chainId,
      nonce: o.nonce,
      gasLimit,
      maxFeePerGas: o.maxFeePerGas,
      maxPriorityFeePerGas: o.maxPriorityFeePerGas,
      to: addressOf(contract),
      data: encodeCall(contract.interface, method, args),
    };
    return signCallTx(tx, this.operator.signingKey);
  }

  /** The receipt of a sent transaction (short polling, see receipts.ts); throws CALL_EXCEPTION when it reverted. */
  async waitFor(tx: SentTx): Promise<TransactionReceipt> {
    return succeeded(tx, await this.receiptOf(tx.hash));
  }

  /** waitFor for the payment path: the receipt read raw, without ethers' TransactionReceipt (rpc/rawRpc.ts). */
  async waitMined(tx: SentTx): Promise<MinedReceipt> {
    return succeeded(tx, await this.receipts.wait(tx.hash, () => this.minedReceipt(tx.hash)));
  }

  private async minedReceipt(hash: string): Promise<MinedReceipt | null> {
    const mined = await this.rpc.receipt(hash);
    if (mined !== undefined) return mined;
    // A receipt this does not read as ethers would: ethers reads it (or throws as it always did).
    const r = await this.provider.getTransactionReceipt(hash);
    if (!r) return null;
    const { blockNumber, status, to, from, gasUsed, gasPrice } = r;
    const logs = r.logs.map((l) => ({ address: l.address, topics: [...l.topics], data: l.data }));
    return { hash: r.hash, blockNumber, status, to, from, gasUsed, gasPrice, logs };
  }

  /** Waits for a transaction's receipt (one watch loop for all of them, see receipts.ts); null past `timeoutMs`. */
  receiptOf(hash: string, timeoutMs = 120_000): Promise<TransactionReceipt | null> {
    return this.receipts.wait(hash, () => this.provider.getTransactionReceipt(hash), timeoutMs);
  }

  /** Sends a transaction from the operator (nonce-serialised) and waits for its receipt. */
  async sendAndWait(
    build: (overrides: TxOverrides) => Promise<TransactionResponse>,
  ): Promise<{ tx: TransactionResponse; receipt: TransactionReceipt }> {
    const tx = await this.sender.send(build);
    return { tx, receipt: await this.waitFor(tx) };
  }

  /**
   * Several view calls in one round trip (Multicall3, at its canonical address on Base and on the embedded chain).
   * A call that fails or returns nothing (no code at the address) answers null.
   */
  async readMany<const T extends readonly ReadCall<unknown>[]>(calls: T): Promise<ReadResults<T>> {
    const encoded = calls.map((c) => ({ target: c.target, allowFailure: true, callData: c.callData }));
    // Encoded and decoded with the parsed Interface: the Contract's staticCall resolved every argument first (~2 ms).
    const iface = this.multicall.interface as Interface;
    const answer = await this.rpc.call(MULTICALL3_ADDRESS, encodeCall(iface, "aggregate3", [encoded]));
    const [results] = decodeResult(iface, "aggregate3", answer) as unknown as [{ success: boolean; returnData: string }[]];
    return results.map((r, i) => {
      if (!r.success || r.returnData === "0x") return null;
      try {
        return calls[i].decode(r.returnData);
      } catch {
        return null;
      }
    }) as ReadResults<T>;
  }

  async isDeployed(address: string): Promise<boolean> {
    return (await this.provider.getCode(address)) !== "0x";
  }

  destroy(): void {
    this.provider.destroy();
  }
}

/** The receipt of a transaction that succeeded; throws as ethers' wait does when it reverted. */
function succeeded<R extends { status: number | null; to: string | null; from: string }>(tx: SentTx, receipt: R | null): R {
  if (!receipt) throw new Error(`transaction ${tx.hash} was not mined in time`);
  if (receipt.status !== 1) {
    throw makeError("transaction execution reverted", "CALL_EXCEPTION", {
      action: "sendTransaction",
      data: null,
      reason: null,
      invocation: null,
      revert: null,
      transaction: { to: receipt.to, from: receipt.from, data: "0x" },
      receipt: receipt as unknown as TransactionReceipt,
    });
  }
  return receipt;
}

/** Whether a send failed because the nonce was already used (ethers' NONCE_EXPIRED, or the node's own words). */
function nonceTaken(err: unknown): boolean {
  if (isError(err, "NONCE_EXPIRED")) return true;
  const message = err instanceof Error ? err.message : String(err);
  return /nonce too low|nonce has already been used|Nonce too low/i.test(message);
}
