/**
 * ethers' JsonRpcProvider, sending each request as it is made. ethers queues every request and sends the queue from a
 * setTimeout, even with batching off (batchMaxCount 1): a timer of at least 1 ms before each JSON-RPC call, and a
 * payment makes several in a row. Here a request goes to `_send` at once; the answer, a node's error (through
 * ethers' getRpcError, so callers see the same errors and revert data) and a missing answer are handled as ethers does.
 */
import { JsonRpcProvider, makeError, type JsonRpcError, type JsonRpcPayload, type JsonRpcResult } from "ethers";

export class ImmediateJsonRpcProvider extends JsonRpcProvider {
  private nextId = 1;

  override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
    if (this.destroyed) return super.send(method, params);
    // What JsonRpcProvider.send does first; with a static network it sends nothing.
    this._start();
    const payload: JsonRpcPayload = { method, params, id: this.nextId++, jsonrpc: "2.0" };
    const answers: (JsonRpcResult | JsonRpcError)[] = await this._send(payload);
    const answer = answers.find((r) => r.id === payload.id);
    if (!answer) throw makeError("missing response for request", "BAD_DATA", { value: answers, info: { payload } });
    if ("error" in answer) throw this.getRpcError(payload, answer);
    return answer.result;
  }
}
