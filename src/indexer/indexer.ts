/**
 * The chain indexer: follows the factory's AgentDeployed, the SpendPolicy events of the policies it deployed and
 * USDC AuthorizationUsed of their agents into `chainEvents`, from a stored cursor, with a confirmation depth, and
 * marks ledger entries (`payments.onchain`) confirmed once their events are.
 *
 * Trust: logs are requested by contract address only: the configured factory, addresses the factory itself announced
 * in a (non-removed) AgentDeployed, and the configured USDC. A look-alike event from any other contract is never
 * requested, and every returned log is checked against the address it was requested for.
 *
 * Idempotence: every write is an upsert on the natural key (chainId, txHash, logIndex) (CongoDB does not enforce
 * unique indexes) and a run first compares with what is stored, so re-reading blocks writes nothing. Several
 * indexers (several instances, or a restart) can run on one database.
 *
 * Reorgs: each run re-reads the last `confirmations + reorgBlocks` blocks below the cursor and compares the block
 * hash of every stored event at or above that point with the canonical block at its height; a mismatch (or a
 * height that no longer exists) marks the event `removed` and undoes the ledger confirmation it gave. A transaction
 * that is mined again in another block is picked up by the re-read (new blockHash, `removed: false`).
 */
import { getAddress, zeroPadValue, type Log } from "ethers";
import type { AnyBulkWriteOperation, Filter } from "mongodb";
import type { Logger } from "pino";
import type { ChainClient } from "../chain/client";
import type { Store } from "../store";
import type { ChainEventDoc } from "../store/documents";
import { decode, eventSources, type Decoded, type EventSources } from "./decode";
import { LedgerLinker } from "./ledgerLinks";
import type { IndexerDeps, IndexerRunStats } from "./types";

export type { IndexerDeps, IndexerRunStats } from "./types";

export { POLICY_EVENTS } from "./decode";

/** The cursor's name in `indexerState` (together with the chain id). */
export const INDEXER_NAME = "spendgate";

/**
 * Blocks the indexer has still to read at chain head `head`: from the cursor the indexing instance keeps in the store
 * (`startBlock` before it has one). Any instance can tell (GET /health/ready, the metrics).
 */
export async function indexerLag(store: Store, chainId: number, startBlock: number, head: number): Promise<number> {
  const state = await store.indexerState.findOne({ name: INDEXER_NAME, chainId });
  return Math.max(0, head + 1 - (state?.nextBlock ?? startBlock));
}

/** Full reload of the trusted policy set at least this often (see loadPolicies). */
const POLICY_RELOAD_MS = 60_000;

/** A first run further behind than this many blocks says so (and how to avoid it). */
const CATCH_UP_WARN_BLOCKS = 100_000;

export class Indexer {
  private readonly chain: ChainClient;
  private readonly store: Store;
  private readonly chainId: number;
  private readonly confirmations: number;
  private readonly startBlock: number;
  private readonly logger: Logger;
  private readonly batchBlocks: number;
  private readonly reorgBlocks: number;
  private readonly addressChunk: number;
  private readonly sources: EventSources;
  private readonly ledger: LedgerLinker;

  /** policy (lower case) -> agent (checksummed), from non-removed AgentDeployed events. */
  private policies = new Map<string, string>();
  private tail: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private policiesLoadedAt: number | undefined;
  private lastFrom: number | undefined;
  /** Statistics of the last completed run. */
  lastRun: IndexerRunStats | undefined;

  constructor(deps: IndexerDeps) {
    this.chain = deps.chain;
    this.store = deps.store;
    this.chainId = deps.chainId;
    this.confirmations = Math.max(0, Math.floor(deps.confirmations));
    this.startBlock = Math.max(0, Math.floor(deps.startBlock));
    this.logger = deps.logger;
    this.batchBlocks = Math.max(1, Math.floor(deps.batchBlocks ?? 2000));
    this.reorgBlocks = Math.max(0, Math.floor(deps.reorgBlocks ?? 12));
    this.addressChunk = Math.max(1, Math.floor(deps.addressChunk ?? 100));
    this.sources = eventSources(this.chain);
    this.ledger = new LedgerLinker({
      store: this.store,
      chainId: this.chainId,
      onConfirmed: deps.onConfirmed,
      ownerOf: (agent) => this.chain.policyAt(agent, this.chain.provider).owner(),
    });
  }

  /**
   * Reads new blocks once (and re-reads the reorg window): factory AgentDeployed, then the SpendPolicy events of
   * known policies and USDC AuthorizationUsed of their agents; writes chainEvents, advances the cursor, confirms
   * events deep enough and links them to the ledger. Returns how many chainEvents were written (inserted, changed
   * or marked removed). Runs of one Indexer never overlap: a call made during a run starts after it.
   */
  syncOnce(): Promise<number> {
    const run = this.tail.then(() => this.run());
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Polls every `intervalMs` (timer unref'd, runs never overlap); a tick runs when `turn` says so (the lease). */
  start(intervalMs: number, turn: () => Promise<boolean> = () => Promise.resolve(true)): void {
    if (!this.stopped) return;
    this.stopped = false;
    const schedule = () => {
      if (this.stopped) return;
      this.timer = setTimeout(tick, intervalMs);
      this.timer.unref();
    };
    const tick = async () => {
      this.timer = undefined;
      try {
        if (await turn()) await this.syncOnce();
      } catch (err) {
        this.logger.error({ err }, "indexer run failed; retrying at the next interval");
      }
      schedule();
    };
    schedule();
  }

  /** Stops the polling loop and waits for a run in progress. syncOnce() still works afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.tail;
  }

  // ---------------------------------------------------------------- one run

  private async run(): Promise<number> {
    const started = Date.now();
    const head = await this.chain.provider.getBlockNumber();
    const state = await this.store.indexerState.findOne({ name: INDEXER_NAME, chainId: this.chainId });
    const cursor = state ? Math.min(state.nextBlock, head + 1) : this.startBlock;
    const from = Math.max(this.startBlock, cursor - (state ? this.confirmations + this.reorgBlocks : 0));
    const stats: IndexerRunStats = {
      fromBlock: from,
      toBlock: head,
      head,
      written: 0,
      removed: 0,
      confirmed: 0,
      linked: 0,
      policies: 0,
      ms: 0,
    };

    // 1. Reorgs: stored events from `from` on whose block is no longer canonical.
    const removed = await this.detectReorgs(from);
    stats.removed = removed.length;
    stats.linked += await this.ledger.unlink(removed);

    // 2. The policies the factory deployed (after step 1, so a removed deployment is no longer trusted).
    await this.loadPolicies(
      Math.min(from, this.lastFrom ?? from),
      removed.some((e) => e.event === "AgentDeployed"),
    );
    this.lastFrom = from;

    // 3. Read [from, head] in chunks, writing events and advancing the cursor after each chunk.
    const behind = head - from + 1;
    if (behind > CATCH_UP_WARN_BLOCKS) {
      this.logger.warn(
        { fromBlock: from, head, blocks: behind, startBlock: this.startBlock },
        "indexer catching up on many blocks (set FACTORY_DEPLOY_BLOCK to the factory's deploy block to skip older ones)",
      );
    }
    let chunks = 0;
    for (let a = from; a <= head; a += this.batchBlocks) {
      const b = Math.min(head, a + this.batchBlocks - 1);
      stats.written += await this.indexRange(a, b);
      await this.saveCursor(b + 1);
      if (++chunks % 50 === 0) this.logger.info({ nextBlock: b + 1, head }, "indexer catching up");
    }
    if (from > head) await this.saveCursor(Math.max(cursor, from));

    // 4. Confirmation depth, then the ledger.
    const { confirmed, linked } = await this.confirm(head - this.confirmations);
    stats.confirmed = confirmed;
    stats.linked += linked;
    stats.linked += await this.ledger.reconcile(state?.updatedAt);

    stats.written += stats.removed;
    stats.policies = this.policies.size;
    stats.ms = Date.now() - started;
    this.lastRun = stats;
    if (stats.written || stats.linked) this.logger.debug({ indexer: stats }, "indexer run");
    return stats.written;
  }

  private async saveCursor(nextBlock: number): Promise<void> {
    await this.store.indexerState.updateOne(
      { name: INDEXER_NAME, chainId: this.chainId },
      { $set: { nextBlock, updatedAt: new Date() }, $setOnInsert: { name: INDEXER_NAME, chainId: this.chainId } },
      { upsert: true },
    );
  }

  /**
   * The trusted policies: every non-removed AgentDeployed of the factory. Reloaded in full on the first run, after a
   * removed deployment and every POLICY_RELOAD_MS; otherwise only deployments from `since` on (those another
   * instance may have indexed in blocks this one skips because it moved the shared cursor).
   */
  private async loadPolicies(since: number, deploymentRemoved: boolean): Promise<void> {
    const full = this.policiesLoadedAt === undefined || deploymentRemoved || Date.now() - this.policiesLoadedAt > POLICY_RELOAD_MS;
    const filter: Filter<ChainEventDoc> = {
      chainId: this.chainId,
      event: "AgentDeployed",
      address: this.sources.factoryAddress,
      removed: false,
    };
    if (!full) filter.blockNumber = { $gte: since };
    const deployed = await this.store.chainEvents.find(filter, { projection: { args: 1 } }).toArray();
    const policies = full ? new Map<string, string>() : this.policies;
    for (const e of deployed) {
      const policy = e.args.policy;
      const agent = e.args.agent;
      if (typeof policy === "string" && typeof agent === "string") policies.set(policy.toLowerCase(), agent);
    }
    this.policies = policies;
    if (full) this.policiesLoadedAt = Date.now();
  }

  /** Reads and writes one block range: factory first (new policies), then policies, then USDC. */
  private async indexRange(from: number, to: number): Promise<number> {
    const decoded: Decoded[] = [];
    const { factoryAddress, usdcAddress, agentDeployedTopic, authorizationUsedTopic, policyTopics } = this.sources;

    const factoryLogs = await this.getLogs(from, to, factoryAddress, [agentDeployedTopic]);
    for (const log of factoryLogs) {
      const d = decode(log, this.sources.factory);
      if (!d) continue;
      decoded.push(d);
      if (typeof d.args.policy === "string" && typeof d.args.agent === "string") {
        this.policies.set(d.args.policy.toLowerCase(), d.args.agent);
      }
    }

    const policyAddresses = [...this.policies.keys()];
    for (let i = 0; i < policyAddresses.length; i += this.addressChunk) {
      const chunk = policyAddresses.slice(i, i + this.addressChunk);
      const source = this.sources.policies(chunk);
      const logs = await this.getLogs(
        from,
        to,
        chunk.map((a) => getAddress(a)),
        [policyTopics],
      );
      for (const log of logs) {
        const d = decode(log, source);
        if (d) decoded.push(d);
      }
    }

    const agents = [...new Set([...this.policies.values()].map((a) => a.toLowerCase()))];
    for (let i = 0; i < agents.length; i += this.addressChunk) {
      const chunk = agents.slice(i, i + this.addressChunk);
      const logs = await this.getLogs(from, to, usdcAddress, [authorizationUsedTopic, chunk.map((a) => zeroPadValue(a, 32))]);
      const wanted = new Set(chunk);
      for (const log of logs) {
        const d = decode(log, this.sources.usdc);
        if (d && d.agentAddress && wanted.has(d.agentAddress.toLowerCase())) decoded.push(d);
      }
    }

    return this.write(decoded);
  }

  /** eth_getLogs; a range the node refuses as too large is split in halves. */
  private async getLogs(from: number, to: number, address: string | string[], topics: (string | string[] | null)[]): Promise<Log[]> {
    try {
      return await this.chain.provider.getLogs({ fromBlock: from, toBlock: to, address, topics });
    } catch (err) {
      const message = String((err as { message?: unknown } | null)?.message ?? err);
      if (to > from && /range|limit|too many|exceed|too large|size|results/i.test(message)) {
        const mid = Math.floor((from + to) / 2);
        return [...(await this.getLogs(from, mid, address, topics)), ...(await this.getLogs(mid + 1, to, address, topics))];
      }
      throw err;
    }
  }

  /** Upserts what is new or changed (re-included elsewhere, or back after a removal). Returns how many. */
  private async write(events: Decoded[]): Promise<number> {
    if (events.length === 0) return 0;
    const existing = new Map<string, { blockHash: string; removed: boolean }>();
    const hashes = [...new Set(events.map((e) => e.txHash))];
    for (let i = 0; i < hashes.length; i += 500) {
      const docs = await this.store.chainEvents
        .find(
          { chainId: this.chainId, txHash: { $in: hashes.slice(i, i + 500) } },
          { projection: { txHash: 1, logIndex: 1, blockHash: 1, removed: 1 } },
        )
        .toArray();
      for (const d of docs) existing.set(`${d.txHash}:${d.logIndex}`, { blockHash: d.blockHash, removed: d.removed });
    }
    const ops: AnyBulkWriteOperation<ChainEventDoc>[] = [];
    const seen = new Set<string>();
    for (const e of events) {
      const key = `${e.txHash}:${e.logIndex}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const stored = existing.get(key);
      if (stored && stored.blockHash === e.blockHash && !stored.removed) continue;
      ops.push({
        updateOne: {
          filter: { chainId: this.chainId, txHash: e.txHash, logIndex: e.logIndex },
          // The content too: a transaction mined again further into a block puts another of its logs at this index.
          update: {
            $setOnInsert: { chainId: this.chainId, txHash: e.txHash, logIndex: e.logIndex },
            $set: {
              address: e.address,
              event: e.event,
              args: e.args,
              agentAddress: e.agentAddress,
              paymentId: e.paymentId,
              blockNumber: e.blockNumber,
              blockHash: e.blockHash,
              removed: false,
              confirmed: false,
            },
          },
          upsert: true,
        },
      });
    }
    if (ops.length) await this.store.chainEvents.bulkWrite(ops, { ordered: false });
    return ops.length;
  }

  /** Marks stored events from `from` on whose block hash is no longer the canonical one. Returns them. */
  private async detectReorgs(from: number): Promise<ChainEventDoc[]> {
    const recent = await this.store.chainEvents.find({ chainId: this.chainId, removed: false, blockNumber: { $gte: from } }).toArray();
    if (recent.length === 0) return [];
    const canonical = new Map<number, string | null>();
    const heights = [...new Set(recent.map((e) => e.blockNumber))];
    for (let i = 0; i < heights.length; i += 10) {
      await Promise.all(
        heights.slice(i, i + 10).map(async (n) => {
          const block = await this.chain.provider.getBlock(n);
          canonical.set(n, block?.hash?.toLowerCase() ?? null);
        }),
      );
    }
    const stale = recent.filter((e) => canonical.get(e.blockNumber) !== e.blockHash);
    if (stale.length === 0) return [];
    await this.store.chainEvents.bulkWrite(
      stale.map((e) => ({
        updateOne: {
          filter: { _id: e._id, blockHash: e.blockHash },
          update: { $set: { removed: true, confirmed: false } },
        },
      })),
      { ordered: false },
    );
    this.logger.warn(
      { removed: stale.map((e) => ({ event: e.event, txHash: e.txHash, blockNumber: e.blockNumber })) },
      "chain reorganisation: events removed",
    );
    return stale.map((e) => ({ ...e, removed: true, confirmed: false }));
  }

  // ---------------------------------------------------------------- confirmations and the ledger

  /**
   * Confirms events at or below `safe`. Their ledger entries are linked first (so a crash loses nothing), in one
   * query and one bulk write: each entry gets the highest block of its events, never a lower one than it has.
   */
  private async confirm(safe: number): Promise<{ confirmed: number; linked: number }> {
    if (safe < 0) return { confirmed: 0, linked: 0 };
    const due = await this.store.chainEvents
      .find({ chainId: this.chainId, removed: false, confirmed: false, blockNumber: { $lte: safe } })
      .toArray();
    if (due.length === 0) return { confirmed: 0, linked: 0 };
    let linked = 0;
    for (let i = 0; i < due.length; i += 500) linked += await this.ledger.link(due.slice(i, i + 500));
    await this.ledger.tell(due);
    const res = await this.store.chainEvents.bulkWrite(
      due.map((e) => ({
        updateOne: {
          filter: { _id: e._id, blockHash: e.blockHash, removed: false },
          update: { $set: { confirmed: true } },
        },
      })),
      { ordered: false },
    );
    return { confirmed: res.modifiedCount, linked };
  }
}
