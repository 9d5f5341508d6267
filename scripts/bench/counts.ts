/**
 * The store commands and JSON-RPC calls one payment makes, counted where SpendGate makes them: every command its
 * MongoDB client sends (the driver's command monitoring: the service must connect with `monitorCommands=true`, see
 * `countedStoreUri`) and every call its JSON-RPC client sends (RawRpc's observer, the service's metrics). Nothing is
 * asserted: the numbers are printed. A payment's count runs from its request to the end of the work it leaves for
 * after its answer (its agent lock's free, its alerts), so the deferred commands count too. Commands made meanwhile by
 * the service's background jobs (heartbeats, recovery's sweep) land in some payments' counts: the median over many
 * payments leaves them out, the mean keeps them.
 */
import type { CommandStartedEvent } from "mongodb";
import type { RunningService } from "../../src/server";
import { stats } from "./sampling";

/** A MongoDB URI whose clients report every command they send (a URI option of the driver). */
export function countedStoreUri(uri: string): string {
  const url = new URL(uri);
  url.searchParams.set("monitorCommands", "true");
  return url.href;
}

export interface Counts {
  store: Map<string, number>;
  rpc: Map<string, number>;
}

/** What one payment made, and how the payments counted compare. */
export interface PerPayment {
  store: number;
  rpc: number;
  /** The mean of JSON-RPC calls per payment. */
  rpcMean: number;
  /** Median per payment; the mean; and the commands by name, summed over the payments counted. */
  summary: string;
}

export class CommandCounter {
  private store = new Map<string, number>();
  private rpc = new Map<string, number>();

  constructor(private readonly svc: RunningService) {
    if (!svc.store.client.options.monitorCommands) throw new Error("the service's store client must connect with monitorCommands=true");
    svc.store.client.on("commandStarted", (e: CommandStartedEvent) => add(this.store, `${e.commandName}${collectionOf(e)}`));
    // RawRpc tells the service's metrics of every call it sends (one place: ethers' provider goes through it too).
    const metrics = svc.telemetry.metrics;
    const told = metrics.rpcCall.bind(metrics);
    metrics.rpcCall = (method: string) => {
      add(this.rpc, method);
      told(method);
    };
  }

  /** The commands and calls made while `fn` ran and the service finished what it left for after its answer. */
  async during(fn: () => Promise<void>): Promise<Counts> {
    this.store = new Map();
    this.rpc = new Map();
    await fn();
    await this.svc.services.ctx.agentLock.settled();
    await this.svc.webhooks.outbox.idle();
    return { store: this.store, rpc: this.rpc };
  }

  /** `runs` payments of `fn`, one after the other, each counted alone. */
  async perPayment(fn: () => Promise<void>, runs: number): Promise<PerPayment> {
    const all: Counts[] = [];
    for (let i = 0; i < runs; i++) all.push(await this.during(fn));
    const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    const store = stats(all.map((c) => total(c.store))).median;
    const rpc = stats(all.map((c) => total(c.rpc))).median;
    const mean = (pick: (c: Counts) => Map<string, number>) => (all.reduce((n, c) => n + total(pick(c)), 0) / runs).toFixed(2);
    const byName = (pick: (c: Counts) => Map<string, number>) => {
      const sum = new Map<string, number>();
      for (const c of all) for (const [k, v] of pick(c)) add(sum, k, v);
      return [...sum]
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${(v / runs).toFixed(2)}`)
        .join(", ");
    };
    const summary =
      `  store, per payment over ${runs}: median ${store}, mean ${mean((c) => c.store)} (${byName((c) => c.store)})\n` +
      `  JSON-RPC, per payment over ${runs}: median ${rpc}, mean ${mean((c) => c.rpc)} (${byName((c) => c.rpc)})`;
    return { store, rpc, rpcMean: all.reduce((n, c) => n + total(c.rpc), 0) / runs, summary };
  }
}

function add(m: Map<string, number>, key: string, n = 1): void {
  m.set(key, (m.get(key) ?? 0) + n);
}

/** ` collection` of a command on one (find, update, findAndModify, ...), empty otherwise. */
function collectionOf(e: CommandStartedEvent): string {
  const target = (e.command as Record<string, unknown>)[e.commandName];
  return typeof target === "string" ? ` ${target}` : "";
}
