/**
 * Background jobs: the webhook worker, the alert catch-up, the recovery of payments a previous run left (before any
 * new one is taken) and its periodic sweep with approval expiry, and the chain indexer under its leader lease. The
 * chain-bound ones run once per network (its own payments, its own chain, its own indexer cursor and lease).
 */
import type { Logger } from "pino";
import { Indexer } from "../indexer/indexer";
import { alertChainEvents, catchUpAlerts } from "../services/alerts";
import { LeaderLease } from "../store/leases";
import type { Booted, Cleanup } from "./boot";
import type { Wired } from "./wiring";

export interface NetworkIndexer {
  indexer: Indexer;
  /** Whether this instance is the one indexing this chain (several instances share the database). */
  indexerLease: LeaderLease;
}

export interface Jobs extends NetworkIndexer {
  /** Every network's indexer, the first one's first (also `indexer` and `indexerLease`). */
  indexers: NetworkIndexer[];
}

export async function startJobs({ config, store, networks }: Booted, wired: Wired, logger: Logger, cleanup: Cleanup): Promise<Jobs> {
  const { services, webhooks, leases } = wired;
  const every = wired.networks.all;
  // Owner alerts: deliveries left pending by a previous run are sent as soon as the worker starts.
  webhooks.worker.start();
  cleanup.push(async () => {
    // Payments answered just before the close free their agent locks (and start their alerts) after their answer.
    await services.ctx.agentLock.settled();
    await webhooks.outbox.idle();
    await webhooks.worker.stop();
  });
  // Alerts are told after the answer: facts a crash kept from being told are found again (the last hour at start).
  let alertsCheckedAt = new Date(Date.now() - 3_600_000);
  const alertSweep = setInterval(() => {
    const since = new Date(alertsCheckedAt.getTime() - 60_000);
    alertsCheckedAt = new Date();
    for (const s of every) catchUpAlerts(s.ctx, since).catch((err: unknown) => logger.error({ err }, "webhook alert catch-up failed"));
  }, 30_000);
  alertSweep.unref();
  cleanup.push(() => clearInterval(alertSweep));

  // Nothing stays between authorise and settle: finish what a previous run left before taking new payments.
  await services.idempotency.releaseOwn();
  let recovered = 0;
  for (const s of every) recovered += await s.payments.recover(new Date(), { own: true });
  recovered += await services.approvals.recover();
  if (recovered) logger.warn({ recovered }, "resolved payments interrupted by a previous run");
  let sweeping: Promise<void> | null = null;
  const sweep = setInterval(
    () => {
      services.approvals.expire().catch((err: unknown) => logger.error({ err }, "approval expiry failed"));
      // Payments whose instance stopped mid-way (lease expired) are finished here, not only at start-up; and those a
      // recovery could not finish (a dependency was down) are tried again within seconds of it coming back.
      // One sweep at a time: one that waits (for an agent's lock, a slow chain) is not joined by the next.
      sweeping ??= wired.networks
        .recover()
        .then(() => undefined)
        .catch((err: unknown) => logger.error({ err }, "payment recovery failed"))
        .finally(() => (sweeping = null));
    },
    Math.min(5_000, Math.max(1_000, Math.floor(config.paymentLeaseMs / 2))),
  );
  sweep.unref();
  cleanup.push(() => clearInterval(sweep));

  const indexers = networks.map(({ config: view, chain }, i): NetworkIndexer => {
    const indexer = new Indexer({
      chain,
      store,
      chainId: view.chainId,
      confirmations: view.confirmations,
      startBlock: view.factoryDeployBlock,
      logger: every.length > 1 ? logger.child({ network: view.networkName }) : logger,
      onConfirmed: (events) => alertChainEvents(every[i].ctx, events),
    });
    // One indexer per chain across the instances sharing the database: the lease's holder indexes, the others wait.
    return { indexer, indexerLease: new LeaderLease(leases, `indexer:${view.chainId}`, config.lockLeaseMs) };
  });
  for (const { indexer, indexerLease } of indexers) {
    // Embedded: catch up before serving (tests read the ledger's confirmations at once). Production: a first
    // catch-up over many blocks must not hold the API back; the loop does it.
    if (config.embeddedChain && (await indexerLease.hold())) await indexer.syncOnce();
    indexer.start(config.embeddedChain ? 500 : 2000, () => indexerLease.hold());
    cleanup.push(() => indexer.stop().then(() => indexerLease.release()));
  }
  return { ...indexers[0], indexers };
}
