/**
 * Ledger linkage for the indexer: marks ledger entries (`payments.onchain`) confirmed from confirmed, non-removed
 * chainEvents, recomputes them when a reorg removes their events, and catches entries written after their event was
 * already confirmed.
 */
import { ZeroAddress } from "ethers";
import type { Filter, ObjectId } from "mongodb";
import type { Store } from "../store";
import { policyChanged } from "../store/channels";
import type { ChainEventDoc, PaymentDoc } from "../store/documents";
import { LedgerWriter } from "../store/ledger";
import { reassignAgentOwner } from "../store/owners";

/** Ledger statuses whose payments a USDC AuthorizationUsed (the settlement) confirms. */
const SETTLED_STATUSES: PaymentDoc["status"][] = ["approved", "processing"];

/** The events that confirm ledger entries. */
const LEDGER_EVENTS = new Set([
  "PaymentAuthorized",
  "PaymentBlocked",
  "PaymentReleased",
  "PaymentVoided",
  "AuthorizationUsed",
  "SwapExecuted",
  "SchemeCredited",
]);
/** Events that change what a policy decides: each moves the agent's `policySeq` (the payment path's cache; policyChanged). */
const POLICY_CHANGE_EVENTS = new Set(["PolicyUpdated", "PausedSet", "OperatorSet", "OwnerSet"]);

/** How far back (ms) the ledger reconciliation looks before the previous run, for clock skew between instances. */
const RECONCILE_SLACK_MS = 5 * 60_000;

export interface LedgerLinkerDeps {
  store: Store;
  chainId: number;
  /** Told every event as it becomes confirmed, before it is marked so (owner alerts): at least once per event. */
  onConfirmed?: (events: ChainEventDoc[]) => Promise<void>;
  /** The agent contract's owner now (its latest block), or null when it cannot be read. */
  ownerOf?: (agentAddress: string) => Promise<string | null>;
}

/** Links confirmed chainEvents to the ledger entries they match, and undoes that for removed ones. */
export class LedgerLinker {
  private readonly store: Store;
  private readonly ledger: LedgerWriter;
  private readonly chainId: number;
  private reconciledAt: number | undefined;
  private readonly onConfirmed: LedgerLinkerDeps["onConfirmed"];
  private readonly ownerOf: LedgerLinkerDeps["ownerOf"];

  constructor(deps: LedgerLinkerDeps) {
    this.store = deps.store;
    this.ledger = new LedgerWriter(deps.store.payments);
    this.chainId = deps.chainId;
    this.onConfirmed = deps.onConfirmed;
    this.ownerOf = deps.ownerOf;
  }

  /** Tells the owner-alert hook the events about to be marked confirmed (a failure fails the run, which retries). */
  async tell(events: ChainEventDoc[]): Promise<void> {
    if (this.onConfirmed) await this.onConfirmed(events);
  }

  /** Marks the ledger entries these (confirmed) events match `onchain.confirmed`, at their highest block. */
  async link(events: ChainEventDoc[]): Promise<number> {
    const changed = new Set(events.flatMap((e) => (POLICY_CHANGE_EVENTS.has(e.event) && e.agentAddress ? [e.agentAddress] : [])));
    for (const agentAddress of changed) await policyChanged(this.store, agentAddress);
    // A hand-over relayed by anyone (the contract allows it): the service's owner follows the chain's.
    for (const agentAddress of new Set(events.flatMap((e) => (e.event === "OwnerSet" && e.agentAddress ? [e.agentAddress] : [])))) {
      await this.followOwner(agentAddress, Math.max(...events.filter((e) => e.event === "OwnerSet").map((e) => e.blockNumber)));
    }
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
    const confirmed: { id: ObjectId; blockNumber: number }[] = [];
    for (const p of candidates) {
      const related = [
        ...(p.paymentId ? (byPaymentId.get(p.paymentId) ?? []) : []),
        ...(p.txHash ? (byTxHash.get(p.txHash.toLowerCase()) ?? []) : []),
        ...(p.authorizeTxHash ? (byTxHash.get(p.authorizeTxHash.toLowerCase()) ?? []) : []),
      ].filter((e) => matches(e, p));
      if (related.length === 0) continue;
      const blockNumber = Math.max(...related.map((e) => e.blockNumber));
      if (p.onchain?.confirmed && p.onchain.blockNumber !== null && p.onchain.blockNumber >= blockNumber) continue;
      confirmed.push({ id: p._id, blockNumber });
    }
    return this.ledger.confirm(confirmed, swapsOf(events), creditsOf(events));
  }

  /** Gives a known agent the owner of its latest OwnerSet up to `upTo` (confirmed now, or before), if it has another. */
  private async followOwner(agentAddress: string, upTo: number): Promise<void> {
    const [latest] = await this.store.chainEvents
      .find({ chainId: this.chainId, event: "OwnerSet", agentAddress, removed: false, blockNumber: { $lte: upTo } })
      .sort({ blockNumber: -1, logIndex: -1 })
      .limit(1)
      .toArray();
    const owner = latest?.args.owner;
    if (typeof owner !== "string") return;
    const agent = await this.store.agents.findOne({ address: agentAddress });
    if (!agent?.ownerAddress || agent.ownerAddress === owner) return;
    // A confirmed OwnerSet may already be history: a later hand-over (written by the service as soon as it was mined,
    // or relayed by anyone and not confirmed yet) named another owner. Only the chain's owner now is followed, never
    // an older one (which would give the agent back, and revoke the new owner's keys, until the next run).
    // Unreadable now: the run fails and is retried (the event is not dropped).
    const now = this.ownerOf ? await this.ownerOf(agentAddress) : owner;
    if (now === null || now.toLowerCase() !== owner.toLowerCase()) return;
    await reassignAgentOwner(this.store, agentAddress, owner);
  }

  /** After removals: every ledger entry they had confirmed is recomputed from the events that remain. */
  async unlink(removed: ChainEventDoc[]): Promise<number> {
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
        await this.ledger.setOnchain(p._id, onchain);
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
  async reconcile(previousRunAt: Date | undefined): Promise<number> {
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
      if (await this.ledger.setOnchain(p._id, onchain, true)) changed += 1;
    }
    this.reconciledAt = startedAt;
    return changed;
  }

  /** A ledger entry's `onchain` from its confirmed, non-removed events; null when it has none. */
  private async onchainOf(p: PaymentDoc): Promise<PaymentDoc["onchain"] | null> {
    const or: Filter<ChainEventDoc>[] = [];
    if (p.paymentId) {
      or.push({
        event: { $in: ["PaymentAuthorized", "PaymentReleased", "PaymentVoided"] },
        paymentId: p.paymentId,
        address: p.policyAddress,
      });
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
 * SwapExecuted becomes part of its payment's ledger entry (`swap`), when the service has not written it already (a
 * restart between the swap and its answer, or a swap sent by another instance).
 */
function swapsOf(events: ChainEventDoc[]): Parameters<LedgerWriter["confirm"]>[1] {
  return events
    .flatMap((e) => (e.event === "SwapExecuted" && e.paymentId ? [{ ...e, paymentId: e.paymentId }] : []))
    .map((e) => ({
      paymentId: e.paymentId,
      policyAddress: e.address,
      swap: {
        txHash: e.txHash,
        tokenIn: e.args.tokenIn === ZeroAddress ? ("ETH" as const) : ("WETH" as const),
        amountIn: e.args.amountIn as string,
        amountOut: e.args.amountOut as string,
      },
    }));
}

/** SchemeCredited gives its deposit's or ceiling's entry the credit's transaction (`creditTxHash`), once. */
function creditsOf(events: ChainEventDoc[]): Parameters<LedgerWriter["confirm"]>[2] {
  return events.flatMap((e) =>
    e.event === "SchemeCredited" && e.paymentId ? [{ paymentId: e.paymentId, policyAddress: e.address, txHash: e.txHash }] : [],
  );
}

/**
 * The ledger entries an event confirms: PaymentAuthorized/Released/Voided by paymentId (of that policy), PaymentBlocked
 * by its transaction (payments.txHash or authorizeTxHash), AuthorizationUsed by (agent, nonce) of settled payments.
 * `anyStatus` widens the last to every status (to undo a confirmation whatever happened since).
 */
function ledgerMatch(
  e: Pick<ChainEventDoc, "event" | "paymentId" | "address" | "txHash" | "agentAddress">,
  anyStatus = false,
): Filter<PaymentDoc> | null {
  switch (e.event) {
    case "PaymentAuthorized":
    case "PaymentReleased":
    case "PaymentVoided":
    case "SwapExecuted":
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
    case "PaymentVoided":
    case "SwapExecuted":
      return !!e.paymentId && p.paymentId === e.paymentId && p.policyAddress === e.address;
    case "PaymentBlocked":
      return p.txHash?.toLowerCase() === e.txHash || p.authorizeTxHash?.toLowerCase() === e.txHash;
    case "AuthorizationUsed":
      return !!e.paymentId && p.paymentId === e.paymentId && p.agentAddress === e.agentAddress && SETTLED_STATUSES.includes(p.status);
    default:
      return false;
  }
}
