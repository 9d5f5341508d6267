/**
 * The chain indexer: follows the factory's PolicyDeployed, the SpendPolicy events of the policies it deployed and
 * USDC AuthorizationUsed of their agents into `chainEvents`, from a stored cursor, with a confirmation depth, and
 * marks ledger entries (`payments.onchain`) confirmed once their events are.
 *
 * Trust: logs are requested by contract address only: the configured factory, addresses the factory itself announced
 * in a (non-removed) PolicyDeployed, and the configured USDC. A look-alike event from any other contract is never
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
import { ZeroAddress, getAddress, zeroPadValue, type Interface, type Log } from "ethers";
import type { AnyBulkWriteOperation, Filter, ObjectId } from "mongodb";
import type { Logger } from "pino";
import type { ChainClient } from "../chain/client";
import type { Store } from "../store";
import type { ChainEventDoc, PaymentDoc } from "../store/documents";

/** The cursor's name in `indexerState` (together with the chain id). */
export const INDEXER_NAME = "spendgate";

/** The SpendPolicy events indexed: the auditors' interface of contracts/ISpendPolicy.sol. */
export const POLICY_EVENTS = [
  "PaymentAuthorized",
  "PaymentBlocked",
  "PaymentReleased",
  "PolicyUpdated",
  "PausedSet",
  "OperatorSet",
] as const;

/** Ledger statuses whose payments a USDC AuthorizationUsed (the settlement) confirms. */
const SETTLED_STATUSES: PaymentDoc["status"][] = ["approved", "processing"];

/** Full reload of the trusted policy set at least this often (see loadPolicies). */
const POLICY_RELOAD_MS = 60_000;

/** A first run further behind than this many blocks says so (and how to avoid it). */
const CATCH_UP_WARN_BLOCKS = 100_000;

/** The events that confirm ledger entries. */
const LEDGER_EVENTS = new Set(["PaymentAuthorized", "PaymentBlocked", "PaymentReleased", "AuthorizationUsed"]);

/** How far back (ms) the ledger reconciliation looks before the previous run, for clock skew between instances. */
const RECONCILE_SLACK_MS = 5 * 60_000;

export interface IndexerDeps {
  chain: ChainClient;
  store: Store;
  chainId: number;
  /** An event is confirmed when blockNumber <= head - confirmations (0: immediately). */
  confirmations: number;
  /** First block of the first run (the factory's deploy block). */
  startBlock: number;
  logger: Logger;
  /** Blocks per eth_getLogs call. Default 2000. */
  batchBlocks?: number;
  /** Blocks re-read below the cursor on every run on top of `confirmations` (reorg safety). Default 12. */
  reorgBlocks?: number;
  /** Addresses (policies) or agent topics per eth_getLogs call. Default 100. */
  addressChunk?: number;
}

/** What the last run did (for logs, tests and measurements). */
export interface IndexerRunStats {
  fromBlock: number;
  toBlock: number;
  head: number;
  /** chainEvents inserted or changed (re-included in another block). */
  written: number;
  /** chainEvents marked removed (their block left the canonical chain). */
  removed: number;
  /** chainEvents that became confirmed in this run. */
  confirmed: number;
  /** Ledger entries whose `onchain` this run changed. */
  linked: number;
  policies: number;
  ms: number;
}

type Args = ChainEventDoc["args"];

interface Decoded {
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  address: string;
  event: string;
  args: Args;
  agentAddress: string | null;
  paymentId: string | null;
}

interface Source {
  iface: Interface;
  /** Lower-case addresses this source may emit from. */
  addresses: Set<string>;
  /** topic0 -> event name, for the events indexed from this source. */
  topics: Map<string, string>;
}

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

  private readonly factoryAddress: string;
  private readonly usdcAddress: string;
  private readonly factoryIface: Interface;
  private readonly policyIface: Interface;
  private readonly usdcIface: Interface;
  private readonly policyTopics: Map<string, string>;
  private readonly policyDeployedTopic: string;
  private readonly authorizationUsedTopic: string;

  /** policy (lower case) -> agent (checksummed), from non-removed PolicyDeployed events. */
  private policies = new Map<string, string>();
  private tail: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private reconciledAt: number | undefined;
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

    this.factoryAddress = getAddress(this.chain.factory.target as string);
    this.usdcAddress = getAddress(this.chain.usdc.target as string);
    this.factoryIface = this.chain.factory.interface;
    this.policyIface = this.chain.policyAt(ZeroAddress).interface;
    this.usdcIface = this.chain.usdc.interface;
    this.policyDeployedTopic = this.factoryIface.getEvent("PolicyDeployed")!.topicHash;
    this.authorizationUsedTopic = this.usdcIface.getEvent("AuthorizationUsed")!.topicHash;
    this.policyTopics = new Map(POLICY_EVENTS.map((name) => [this.policyIface.getEvent(name)!.topicHash, name]));
  }

  /**
   * Reads new blocks once (and re-reads the reorg window): factory PolicyDeployed, then the SpendPolicy events of
   * known policies and USDC AuthorizationUsed of their agents; writes chainEvents, advances the cursor, confirms
   * events deep enough and links them to the ledger. Returns how many chainEvents were written (inserted, changed
   * or marked removed). Runs of one Indexer never overlap: a call made during a run starts after it.
   */
  syncOnce(): Promise<number> {
    const run = this.tail.then(() => this.run());
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Polls every `intervalMs` (timer unref'd, runs never overlap); errors are logged, never thrown. */
  start(intervalMs: number): void {
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
        await this.syncOnce();
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
    stats.linked += await this.unlink(removed);

    // 2. The policies the factory deployed (after step 1, so a removed deployment is no longer trusted).
    await this.loadPolicies(Math.min(from, this.lastFrom ?? from), removed.some((e) => e.event === "PolicyDeployed"));
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
    stats.linked += await this.reconcile(state?.updatedAt);

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
   * The trusted policies: every non-removed PolicyDeployed of the factory. Reloaded in full on the first run, after a
   * removed deployment and every POLICY_RELOAD_MS; otherwise only deployments from `since` on (those another
   * instance may have indexed in blocks this one skips because it moved the shared cursor).
   */
  private async loadPolicies(since: number, deploymentRemoved: boolean): Promise<void> {
    const full = this.policiesLoadedAt === undefined || deploymentRemoved || Date.now() - this.policiesLoadedAt > POLICY_RELOAD_MS;
    const filter: Filter<ChainEventDoc> = { chainId: this.chainId, event: "PolicyDeployed", address: this.factoryAddress, removed: false };
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

    const factory: Source = {
      iface: this.factoryIface,
      addresses: new Set([this.factoryAddress.toLowerCase()]),
      topics: new Map([[this.policyDeployedTopic, "PolicyDeployed"]]),
    };
    const factoryLogs = await this.getLogs(from, to, this.factoryAddress, [this.policyDeployedTopic]);
    for (const log of factoryLogs) {
      const d = this.decode(log, factory);
      if (!d) continue;
      decoded.push(d);
      if (typeof d.args.policy === "string" && typeof d.args.agent === "string") {
        this.policies.set(d.args.policy.toLowerCase(), d.args.agent);
      }
    }

    const policyAddresses = [...this.policies.keys()];
    const policyTopics = [...this.policyTopics.keys()];
    for (let i = 0; i < policyAddresses.length; i += this.addressChunk) {
      const chunk = policyAddresses.slice(i, i + this.addressChunk);
      const source: Source = { iface: this.policyIface, addresses: new Set(chunk), topics: this.policyTopics };
      const logs = await this.getLogs(from, to, chunk.map((a) => getAddress(a)), [policyTopics]);
      for (const log of logs) {
        const d = this.decode(log, source);
        if (d) decoded.push(d);
      }
    }

    const agents = [...new Set([...this.policies.values()].map((a) => a.toLowerCase()))];
    const usdc: Source = {
      iface: this.usdcIface,
      addresses: new Set([this.usdcAddress.toLowerCase()]),
      topics: new Map([[this.authorizationUsedTopic, "AuthorizationUsed"]]),
    };
    for (let i = 0; i < agents.length; i += this.addressChunk) {
      const chunk = agents.slice(i, i + this.addressChunk);
      const logs = await this.getLogs(from, to, this.usdcAddress, [this.authorizationUsedTopic, chunk.map((a) => zeroPadValue(a, 32))]);
      const wanted = new Set(chunk);
      for (const log of logs) {
        const d = this.decode(log, usdc);
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
      const message = String((err as Error)?.message ?? err);
      if (to > from && /range|limit|too many|exceed|too large|size|results/i.test(message)) {
        const mid = Math.floor((from + to) / 2);
        return [...(await this.getLogs(from, mid, address, topics)), ...(await this.getLogs(mid + 1, to, address, topics))];
      }
      throw err;
    }
  }

  /** Decodes a log from a trusted source into plain JSON; null for anything else. */
  private decode(log: Log, source: Source): Decoded | null {
    if (log.removed) return null;
    if (!source.addresses.has(log.address.toLowerCase())) return null;
    const name = source.topics.get(log.topics[0]);
    if (!name) return null;
    let parsed;
    try {
      parsed = source.iface.parseLog({ topics: [...log.topics], data: log.data });
    } catch {
      return null;
    }
    if (!parsed || parsed.name !== name) return null;
    const args: Args = {};
    parsed.fragment.inputs.forEach((input, i) => {
      args[input.name] = plain(parsed.args[i], input.type);
    });
    const agent = typeof args.agent === "string" ? args.agent : typeof args.authorizer === "string" ? args.authorizer : null;
    const paymentId = typeof args.paymentId === "string" ? args.paymentId : typeof args.nonce === "string" ? args.nonce : null;
    return {
      txHash: log.transactionHash.toLowerCase(),
      logIndex: log.index,
      blockNumber: log.blockNumber,
      blockHash: log.blockHash.toLowerCase(),
      address: getAddress(log.address),
      event: name,
      args,
      agentAddress: agent,
      paymentId,
    };
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
          update: {
            $setOnInsert: {
              chainId: this.chainId,
              txHash: e.txHash,
              logIndex: e.logIndex,
              address: e.address,
              event: e.event,
              args: e.args,
              agentAddress: e.agentAddress,
              paymentId: e.paymentId,
            },
            $set: { blockNumber: e.blockNumber, blockHash: e.blockHash, removed: false, confirmed: false },
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
    const recent = await this.store.chainEvents
      .find({ chainId: this.chainId, removed: false, blockNumber: { $gte: from } })
      .toArray();
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
          filter: { _id: e._id as ObjectId, blockHash: e.blockHash },
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
    for (let i = 0; i < due.length; i += 500) linked += await this.link(due.slice(i, i + 500));
    const res = await this.store.chainEvents.bulkWrite(
      due.map((e) => ({
        updateOne: {
          filter: { _id: e._id as ObjectId, blockHash: e.blockHash, removed: false },
          update: { $set: { confirmed: true } },
        },
      })),
      { ordered: false },
    );
    return { confirmed: res.modifiedCount, linked };
  }

  /** Marks the ledger entries these (confirmed) events match `onchain.confirmed`, at their highest block. */
  private async link(events: ChainEventDoc[]): Promise<number> {
    if (!events.some((e) => LEDGER_EVENTS.has(e.event))) return 0;
    const byPaymentId = new Map<string, ChainEventDoc[]>();
    const byTxHash = new Map<string, ChainEventDoc[]>();
    for (const e of events) {
      if (e.paymentId) byPaymentId.set(e.paymentId, [...(byPaymentId.get(e.paymentId) ?? []), e]);
      byTxHash.set(e.txHash, [...(byTxHash.get(e.txHash) ?? []), e]);
    }
    const paymentIds = [...byPaymentId.keys()];
    const txHashes = [...byTxHash.keys()];
    const candidates = await this.store.payments
      .find({ $or: [{ paymentId: { $in: paymentIds } }, { txHash: { $in: txHashes } }, { authorizeTxHash: { $in: txHashes } }] })
      .toArray();
    const ops: AnyBulkWriteOperation<PaymentDoc>[] = [];
    for (const p of candidates) {
      const related = [
        ...(p.paymentId ? byPaymentId.get(p.paymentId) ?? [] : []),
        ...(p.txHash ? byTxHash.get(p.txHash.toLowerCase()) ?? [] : []),
        ...(p.authorizeTxHash ? byTxHash.get(p.authorizeTxHash.toLowerCase()) ?? [] : []),
      ].filter((e) => matches(e, p));
      if (related.length === 0) continue;
      const blockNumber = Math.max(...related.map((e) => e.blockNumber));
      if (p.onchain?.confirmed === true && p.onchain.blockNumber !== null && p.onchain.blockNumber >= blockNumber) continue;
      ops.push({
        updateOne: {
          filter: {
            _id: p._id as ObjectId,
            $or: [
              { "onchain.confirmed": { $ne: true } },
              { "onchain.blockNumber": null },
              { "onchain.blockNumber": { $lt: blockNumber } },
            ],
          },
          update: { $set: { onchain: { confirmed: true, blockNumber } } },
        },
      });
    }
    if (ops.length === 0) return 0;
    const res = await this.store.payments.bulkWrite(ops, { ordered: false });
    return res.modifiedCount;
  }

  /** After removals: every ledger entry they had confirmed is recomputed from the events that remain. */
  private async unlink(removed: ChainEventDoc[]): Promise<number> {
    let changed = 0;
    const done = new Set<string>();
    for (const e of removed) {
      const match = ledgerMatch(e, true);
      if (!match) continue;
      for (const p of await this.store.payments.find(match).toArray()) {
        const id = String(p._id);
        if (done.has(id)) continue;
        done.add(id);
        const onchain = (await this.onchainOf(p)) ?? { confirmed: false, blockNumber: null };
        if (p.onchain?.confirmed === onchain.confirmed && p.onchain?.blockNumber === onchain.blockNumber) continue;
        await this.store.payments.updateOne({ _id: p._id }, { $set: { onchain } });
        changed += 1;
      }
    }
    return changed;
  }

  /**
   * Ledger entries written or rewritten after their event was confirmed (the payment service inserts a blocked
   * entry after its transaction is mined, and sets `onchain` itself): every entry changed since the previous run
   * that is not confirmed yet is recomputed from the confirmed events.
   */
  private async reconcile(previousRunAt: Date | undefined): Promise<number> {
    const startedAt = Date.now();
    const since = new Date((this.reconciledAt ?? previousRunAt?.getTime() ?? 0) - RECONCILE_SLACK_MS);
    const candidates = await this.store.payments
      .find({
        "onchain.confirmed": { $ne: true },
        updatedAt: { $gte: since },
        $or: [{ paymentId: { $ne: null } }, { txHash: { $ne: null } }, { authorizeTxHash: { $ne: null } }],
      })
      .toArray();
    let changed = 0;
    for (const p of candidates) {
      const onchain = await this.onchainOf(p);
      if (!onchain) continue;
      const res = await this.store.payments.updateOne(
        { _id: p._id, "onchain.confirmed": { $ne: true } },
        { $set: { onchain } },
      );
      changed += res.modifiedCount;
    }
    this.reconciledAt = startedAt;
    return changed;
  }

  /** A ledger entry's `onchain` from its confirmed, non-removed events; null when it has none. */
  private async onchainOf(p: PaymentDoc): Promise<PaymentDoc["onchain"] | null> {
    const or: Filter<ChainEventDoc>[] = [];
    if (p.paymentId) {
      or.push({ event: { $in: ["PaymentAuthorized", "PaymentReleased"] }, paymentId: p.paymentId, address: p.policyAddress });
      if (SETTLED_STATUSES.includes(p.status)) {
        or.push({ event: "AuthorizationUsed", paymentId: p.paymentId, agentAddress: p.agentAddress });
      }
    }
    const hashes = [p.txHash, p.authorizeTxHash].filter((h): h is string => !!h).map((h) => h.toLowerCase());
    if (hashes.length) or.push({ event: "PaymentBlocked", txHash: { $in: hashes } });
    if (or.length === 0) return null;
    const events = await this.store.chainEvents
      .find({ chainId: this.chainId, removed: false, confirmed: true, $or: or }, { projection: { blockNumber: 1 } })
      .toArray();
    if (events.length === 0) return null;
    return { confirmed: true, blockNumber: Math.max(...events.map((e) => e.blockNumber)) };
  }
}

/**
 * The ledger entries an event confirms: PaymentAuthorized/Released by paymentId (of that policy), PaymentBlocked by
 * its transaction (payments.txHash or authorizeTxHash), AuthorizationUsed by (agent, nonce) of settled payments.
 * `anyStatus` widens the last to every status (to undo a confirmation whatever happened since).
 */
function ledgerMatch(e: Pick<ChainEventDoc, "event" | "paymentId" | "address" | "txHash" | "agentAddress">, anyStatus = false): Filter<PaymentDoc> | null {
  switch (e.event) {
    case "PaymentAuthorized":
    case "PaymentReleased":
      return e.paymentId ? { paymentId: e.paymentId, policyAddress: e.address } : null;
    case "PaymentBlocked":
      return { $or: [{ txHash: e.txHash }, { authorizeTxHash: e.txHash }] };
    case "AuthorizationUsed":
      if (!e.paymentId || !e.agentAddress) return null;
      return anyStatus
        ? { agentAddress: e.agentAddress, paymentId: e.paymentId }
        : { agentAddress: e.agentAddress, paymentId: e.paymentId, status: { $in: SETTLED_STATUSES } };
    default:
      return null;
  }
}

/** The in-memory form of ledgerMatch (without `anyStatus`). */
function matches(e: ChainEventDoc, p: PaymentDoc): boolean {
  switch (e.event) {
    case "PaymentAuthorized":
    case "PaymentReleased":
      return !!e.paymentId && p.paymentId === e.paymentId && p.policyAddress === e.address;
    case "PaymentBlocked":
      return p.txHash?.toLowerCase() === e.txHash || p.authorizeTxHash?.toLowerCase() === e.txHash;
    case "AuthorizationUsed":
      return !!e.paymentId && p.paymentId === e.paymentId && p.agentAddress === e.agentAddress && SETTLED_STATUSES.includes(p.status);
    default:
      return false;
  }
}

/** A decoded event argument as plain JSON: bigints as decimal strings, addresses checksummed, bytes lower case. */
function plain(value: unknown, type: string): string | number | boolean {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value;
  if (type === "address" && typeof value === "string") return getAddress(value);
  if (typeof value === "string") return type.startsWith("bytes") ? value.toLowerCase() : value;
  return String(value);
}
