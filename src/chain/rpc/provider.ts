/**
 * ethers' JsonRpcProvider whose requests go through the service's raw JSON-RPC client (rawRpc.ts): one keep-alive
 * HTTP path to the node for the payment path's raw calls and for everything asked through ethers. ethers queues every
 * request and sends the queue from a setTimeout, even with batching off (batchMaxCount 1): a timer of at least 1 ms
 * before each call, and a payment makes several in a row. Here a request leaves in the same turn of the event loop;
 * answers and errors are ethers' (RawRpc answers as provider.send does, through the provider's getRpcError).
 */
import { JsonRpcProvider, type JsonRpcApiProviderOptions, type Networkish } from "ethers";
import { RawRpc, type RpcObserver } from "./rawRpc";

export class ImmediateJsonRpcProvider extends JsonRpcProvider {
  /** The raw client its requests go through; the payment path also calls it directly (no ethers formatting). */
  readonly raw: RawRpc;

  constructor(url: string, network?: Networkish, options?: JsonRpcApiProviderOptions, observer?: RpcObserver, timeoutMs?: number) {
    super(url, network, options);
    this.raw = new RawRpc(url, this, observer, timeoutMs);
  }

  override send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
    if (this.destroyed) return super.send(method, params);
    return this.raw.send(method, params as unknown[]);
  }

  override destroy(): void {
    this.raw.destroy();
    super.destroy();
  }
}
