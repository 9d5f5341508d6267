/**
 * The payment path's JSON-RPC calls (eth_call, eth_sendRawTransaction, eth_getTransactionReceipt) straight over a
 * keep-alive HTTP connection, without ethers' provider machinery: per call it copies and hexlifies the request, resolves
 * its addresses (a checksum each), clones the network, schedules a drain timer and an abort signal, and wraps a
 * receipt in TransactionReceipt and Log objects (checksumming every address in it). About 1.5 ms of CPU per payment.
 *
 * Calls made in the same turn of the event loop go as one JSON-RPC batch (ethers batches too, after a 10 ms stall):
 * with payments in flight several ask at once, and every HTTP request costs a socket write and a read on both sides.
 *
 * The errors stay ethers': a JSON-RPC error becomes the provider's own getRpcError for the same payload (the call
 * exception with its revert data, NONCE_EXPIRED for "nonce too low", ...), a non-2xx answer its SERVER_ERROR, a
 * connection failure the socket's error; a 429 is sent again with ethers' back-off, and a request times out with
 * ethers' TIMEOUT (after RPC_TIMEOUT_MS, 10 s by default; ethers' own default is 5 minutes).
 */
import { STATUS_CODES } from "node:http";
import { Agent, request as undiciRequest } from "undici";
import { FetchRequest, type JsonRpcError, type JsonRpcPayload, type JsonRpcProvider, type JsonRpcResult, hexlify, makeError } from "ethers";
import { checksumOf } from "./abiCodec";

/** ethers' FetchRequest default. */
const TIMEOUT_MS = 300_000;
/** ethers' batchMaxCount default. */
const MAX_BATCH = 100;
/** ethers' FetchRequest throttle on 429: attempts, and the slot its random back-off is counted in. */
const MAX_ATTEMPTS = 12;
const SLOT_MS = 250;

interface HttpAnswer {
  status: number;
  statusText: string;
  body: string;
  retryAfter?: string;
}

interface Pending {
  payload: JsonRpcPayload;
  resolve: (result: unknown) => void;
  reject: (err: unknown) => void;
}

/** What the payment path reads of a mined transaction's receipt. */
export interface MinedReceipt {
  hash: string;
  blockNumber: number;
  /** 1 when it succeeded (null on a pre-Byzantium chain, as in ethers). */
  status: number | null;
  to: string | null;
  from: string;
  gasUsed: bigint;
  /** The effective gas price, as ethers' TransactionReceipt.gasPrice. */
  gasPrice: bigint;
  /** Addresses as the node wrote them (compare them lower-cased). */
  logs: { address: string; topics: string[]; data: string }[];
}

/** Told of every call and every failure (the service's metrics); node: the node answered an error (a revert too). */
export interface RpcObserver {
  rpcCall(method: string): void;
  rpcError(method: string, kind: "node" | "transport"): void;
}

const HEX = /^0x[0-9a-fA-F]*$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;

export class RawRpc {
  private readonly agent: Agent;
  private readonly url: URL;
  private nextId = 1;
  private readonly queue: Pending[] = [];
  private flushing = false;
  /** Cleared for good when the node refuses a batch as a whole: each call then goes alone. */
  private batching = true;

  constructor(
    url: string,
    /** Its errors are the ones these calls throw. */
    private readonly provider: JsonRpcProvider,
    private readonly observer?: RpcObserver,
    /**
     * Time limit of one HTTP request to the node, whole (RPC_TIMEOUT_MS): a node that accepts the connection and never
     * answers fails the call with ethers' TIMEOUT, which the API answers as 503 unavailable, instead of a hang.
     */
    private readonly timeoutMs = TIMEOUT_MS,
  ) {
    this.url = new URL(url);
    this.agent = new Agent();
  }

  /** provider.send(method, params), the same answer and errors. */
  send<T = unknown>(method: string, params: unknown[]): Promise<T> {
    if (this.provider.destroyed) {
      const destroyed: Error = makeError("provider destroyed; cancelled request", "UNSUPPORTED_OPERATION", { operation: method });
      return Promise.reject(destroyed);
    }
    const payload: JsonRpcPayload = { method, params, id: this.nextId++, jsonrpc: "2.0" };
    this.observer?.rpcCall(method);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ payload, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Sends the calls made since the last flush as one JSON-RPC batch (one HTTP request, as ethers batches): the payments
   * in flight ask at the same moments, and each request costs a socket write on both sides of loopback.
   */
  private flush(): void {
    this.flushing = false;
    while (this.queue.length) void this.post(this.queue.splice(0, this.batching ? MAX_BATCH : 1));
  }

  private async post(batch: Pending[]): Promise<void> {
    const one = batch.length === 1;
    try {
      const { status, statusText, body } = await this.throttled(JSON.stringify(one ? batch[0].payload : batch.map((c) => c.payload)));
      // The body read once (a batch's answer is a hundred receipts at times): undefined when it is not JSON.
      let answer: unknown;
      let parsed = true;
      try {
        answer = JSON.parse(body);
      } catch {
        parsed = false;
      }
      if (!one && refusedBatch(status, parsed, answer)) {
        // A node or gateway without batches (some hosted RPCs): it ran none of them, so each is sent again, alone.
        this.batching = false;
        for (const c of batch) void this.post([c]);
        return;
      }
      if (status < 200 || status >= 300) {
        throw makeError(`server response ${status} ${statusText}`, "SERVER_ERROR", {
          request: new FetchRequest(this.url.href),
          info: { requestUrl: this.url.href, responseBody: body, responseStatus: `${status} ${statusText}` },
        });
      }
      if (!parsed) throw makeError("response body is not valid JSON", "UNSUPPORTED_OPERATION", { operation: "bodyJson", info: { body } });
      const byId = new Map<unknown, JsonRpcResult | JsonRpcError>();
      for (const r of (Array.isArray(answer) ? answer : [answer]) as ({ id?: unknown } | null)[]) {
        // The first answer of an id, as a search from the start would find it.
        if (r && typeof r === "object" && !byId.has(r.id)) byId.set(r.id, r as JsonRpcResult | JsonRpcError);
      }
      for (const { payload, resolve, reject } of batch) {
        const resp = byId.get(payload.id);
        if (!resp) reject(makeError("missing response for request", "BAD_DATA", { value: answer, info: { payload } }));
        else if ("error" in resp) {
          this.observer?.rpcError(payload.method, "node");
          reject(this.provider.getRpcError(payload, resp));
        } else resolve(resp.result);
      }
    } catch (err) {
      for (const { payload, reject } of batch) {
        this.observer?.rpcError(payload.method, "transport");
        reject(err);
      }
    }
  }

  /** provider.call({ to, data }) at the latest block: its answer, and its call exception when it reverts. */
  async call(to: string, data: string): Promise<string> {
    // The transaction as ethers' getRpcTransaction writes it: the call exception carries it.
    return hexlify(await this.send<string>("eth_call", [{ to: to.toLowerCase(), data: data.toLowerCase() }, "latest"]));
  }

  /** The receipt of `hash` (null while unmined), read raw; undefined when it is not one this reads as ethers would. */
  async receipt(hash: string): Promise<MinedReceipt | null | undefined> {
    const raw = await this.send<Record<string, unknown> | null>("eth_getTransactionReceipt", [hash]);
    return raw == null ? null : minedOf(raw);
  }

  destroy(): void {
    void this.agent.destroy().catch(() => undefined);
  }

  /** The request, sent again on 429 Too Many Requests as ethers' FetchRequest does (its delays, 12 attempts). */
  private async throttled(body: string): Promise<HttpAnswer> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const answer = await this.request(body);
      if (answer.status !== 429) return answer;
      const retryAfter = answer.retryAfter;
      // ethers reads Retry-After as milliseconds.
      const delay =
        retryAfter && /^[1-9][0-9]*$/.test(retryAfter) ? parseInt(retryAfter) : SLOT_MS * Math.trunc(Math.random() * 2 ** attempt);
      await new Promise((r) => setTimeout(r, delay));
    }
    return { status: 599, statusText: "exceeded maximum retry limit", body: "" }; // ethers: the same words, SERVER_ERROR
  }

  /**
   * One HTTP request to the node, over undici's keep-alive pool (a fraction of node:http's CPU a request). The time
   * limit is the whole call, not the socket's idle time: a node that trickles its answer is cut off too.
   */
  private async request(body: string): Promise<HttpAnswer> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(makeError("request timeout", "TIMEOUT")), this.timeoutMs);
    try {
      const res = await undiciRequest(this.url, {
        dispatcher: this.agent,
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: abort.signal,
      });
      const text = await res.body.text();
      const retryAfter = res.headers["retry-after"];
      return {
        status: res.statusCode,
        // undici does not keep the reason phrase: the standard one for the status, as ethers' message words it.
        statusText: STATUS_CODES[res.statusCode] ?? "",
        body: text,
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Whether the node refused a batch as a whole, having run none of its calls: a client error status (4xx but 429,
 * which is retried), or a single JSON-RPC error answering no request (id null or absent) where an array was due.
 */
function refusedBatch(status: number, parsed: boolean, answer: unknown): boolean {
  if (status >= 400 && status < 500 && status !== 429) return true;
  if (status < 200 || status >= 300 || !parsed) return false;
  return (
    !Array.isArray(answer) && typeof answer === "object" && answer !== null && "error" in answer && (answer as { id?: unknown }).id == null
  );
}

const quantity = (v: unknown): bigint | undefined => (typeof v === "string" && HEX.test(v) && v.length > 2 ? BigInt(v) : undefined);
const address = (v: unknown): string | undefined => (typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v) ? v : undefined);

/** The fields read of a JSON-RPC receipt, checked; undefined for anything ethers' formatter would read otherwise. */
function minedOf(raw: Record<string, unknown>): MinedReceipt | undefined {
  const blockNumber = quantity(raw.blockNumber);
  const status = raw.status == null ? null : quantity(raw.status);
  const gasUsed = quantity(raw.gasUsed);
  const gasPrice = quantity(raw.effectiveGasPrice ?? raw.gasPrice);
  const from = address(raw.from);
  const to = raw.to == null ? null : address(raw.to);
  const hash = raw.transactionHash;
  if (
    blockNumber === undefined ||
    status === undefined ||
    gasUsed === undefined ||
    gasPrice === undefined ||
    !from ||
    to === undefined ||
    typeof hash !== "string" ||
    !HASH.test(hash) ||
    !Array.isArray(raw.logs)
  ) {
    return undefined;
  }
  const logs: MinedReceipt["logs"] = [];
  for (const l of raw.logs as { address?: unknown; topics?: unknown; data?: unknown }[]) {
    const a = address(l?.address);
    const topics = l?.topics;
    if (!a || !Array.isArray(topics) || !topics.every((t) => typeof t === "string" && HASH.test(t))) return undefined;
    if (typeof l.data !== "string" || !HEX.test(l.data) || l.data.length % 2) return undefined;
    logs.push({ address: a, topics: topics as string[], data: l.data });
  }
  return {
    hash,
    blockNumber: Number(blockNumber),
    status: status === null ? null : Number(status),
    to: to && checksumOf(to.slice(2).toLowerCase()),
    from: checksumOf(from.slice(2).toLowerCase()),
    gasUsed,
    gasPrice,
    logs,
  };
}
