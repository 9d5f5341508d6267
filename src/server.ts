/**
 * Boots the whole service: the embedded chain and store where the environment names none -> the configuration,
 * resolved once and frozen -> store -> chain -> services -> app -> listen. Used by src/index.ts and by the test
 * stack, so both run exactly the same wiring.
 */
import { createHash, randomBytes } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pino, { type Logger } from "pino";
import { createApp } from "./app";
import { errorBody, unavailable } from "./errors";
import { ChainClient } from "./chain/client";
import type { EmbeddedChain } from "./chain/embedded";
import { startEmbeddedChainThread } from "./chain/embeddedThread";
import { resolveConfig, type Config, type LoadedConfig } from "./config";
import { createServices, type Services } from "./services";
import { KeyService } from "./services/keys";
import { GasMeter } from "./services/gas";
import { answerClientErrors, answerConnect } from "./http/transport";
import { SignatureService } from "./services/signatures";
import { connectStore, type Store } from "./store";
import { startEmbeddedMongo, type EmbeddedMongo } from "./store/embedded";
import { startEmbeddedMongoThread } from "./store/embeddedThread";
import { DistributedMutex, LeaderLease, Leases } from "./store/leases";
import { Heartbeats } from "./store/heartbeats";
import { takeOverDead } from "./services/failover";
import { LocalWalletProvider } from "./wallets/provider";
import { createFacilitator } from "./x402/facilitator";
import { Indexer } from "./indexer/indexer";
import { alertChainEvents, catchUpAlerts } from "./services/alerts";
import { WebhookService } from "./webhooks/endpoints";
import { WebhookOutbox, ensureWebhookIndexes } from "./webhooks/outbox";
import { webhookSecretKey } from "./webhooks/secrets";
import { WebhookWorker } from "./webhooks/worker";

export interface RunningService {
  url: string;
  config: Config;
  services: Services;
  store: Store;
  chain: ChainClient;
  indexer: Indexer;
  /** This instance's heartbeat, and its view of which peers are dead. */
  heartbeats: Heartbeats;
  webhooks: { service: WebhookService; outbox: WebhookOutbox; worker: WebhookWorker };
  /** Whether this instance is the one indexing (several instances share the database). */
  indexerLease: LeaderLease;
  embeddedChain?: EmbeddedChain;
  /** The embedded store when it runs on this thread (its index layer's explain and stats are readable here). */
  embeddedMongo?: EmbeddedMongo;
  logger: Logger;
  server: Server;
  /**
   * Stops: no new connections (the port is free at once) and a 503 for new requests on open ones; waits for the
   * requests in flight (payments included) up to `drainMs` (default: for as long as they take), then closes every
   * connection, the indexer, the workers, the store and the chain.
   */
  close(drainMs?: number): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Reuse a running embedded chain (tests share one per file). */
  embeddedChain?: EmbeddedChain;
  /**
   * Start the embedded chain in its own worker thread (`npm start`), off this event loop; by default it runs in this
   * thread, where tests reach Hardhat directly.
   */
  chainThread?: boolean;
  /** Likewise for the embedded store (`npm start`); by default it runs in this thread. */
  storeThread?: boolean;
  /** With a shared embedded chain: this instance's own operator key (one of the chain's `operators`). */
  operatorPrivateKey?: string;
  /** The clock leases are measured with (tests move one instance's to play a stall of another). */
  clock?: () => number;
}

/** The store's connection error, naming MONGODB_URI (without its credentials) and what to check, not only the socket's error. */
export function storeUnreachable(err: unknown, uri: string, embedded: boolean): Error {
  const reason = err instanceof Error ? err.message : String(err);
  if (embedded) return new Error(`The embedded database did not answer at ${uri}: ${reason}.`, { cause: err });
  // Credentials out, and the query (it may carry TLS or auth options); the hosts stay: they are what to check.
  const shown = uri.replace(/^(mongodb(?:\+srv)?:\/\/)[^@/]*@/, "$1***@").replace(/\?.*$/, "");
  return new Error(
    `Cannot connect to MongoDB at ${shown} (MONGODB_URI): ${reason}. Check that the server is running and reachable from ` +
      "this machine at that host and port, the user and password in the URI, TLS options (tls=true for most hosted " +
      "MongoDB) and, for a replica set, that every member's host name resolves from here.",
    { cause: err },
  );
}

/** A request that arrives while the service stops: 503, and the connection is closed after it. */
function refuseWhileStopping(_req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify(errorBody(unavailable("SpendGate is shutting down: retry in a moment.")));
  res.writeHead(503, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    "Retry-After": "5",
    Connection: "close",
  });
  res.end(body);
}

export async function startService(loaded: LoadedConfig, opts: StartOptions = {}): Promise<RunningService> {
  const logger = opts.logger ?? pino({ level: loaded.logLevel, redact: ["req.headers.authorization", "*.privateKey", "*.apiKey"] });
  // Undone in reverse on close or on a failed start; each step runs even if one before it failed.
  const cleanup: (() => void | Promise<void>)[] = [];
  const undo = async () => {
    for (const fn of cleanup.reverse())
      await Promise.resolve()
        .then(fn)
        .catch(() => undefined);
  };
  try {
    let embeddedChain = opts.embeddedChain;
    if (loaded.embeddedChain && !embeddedChain) {
      const port = loaded.chainPort ?? 0;
      if (opts.chainThread) embeddedChain = await startEmbeddedChainThread({ host: "127.0.0.1", port });
      else {
        // require, not import(): the embedded chain loads Hardhat, which production never needs.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { startEmbeddedChain } = require("./chain/embedded") as typeof import("./chain/embedded");
        embeddedChain = await startEmbeddedChain({ host: "127.0.0.1", port });
      }
      const started = embeddedChain;
      cleanup.push(() => started.close());
    }
    let embeddedMongo: EmbeddedMongo | undefined;
    let embeddedStore: { uri: string; stop(): Promise<void> } | undefined;
    if (loaded.embeddedStore) {
      if (opts.storeThread) embeddedStore = await startEmbeddedMongoThread();
      else embeddedStore = embeddedMongo = await startEmbeddedMongo();
      const started = embeddedStore;
      cleanup.push(() => started.stop());
    }
    const config = resolveConfig(loaded, {
      chain: embeddedChain,
      operatorPrivateKey: opts.operatorPrivateKey,
      // Each embedded run gets its own database so runs never see each other's data.
      store: embeddedStore && { uri: embeddedStore.uri, db: `spendgate_${randomBytes(4).toString("hex")}` },
    });

    const store = await connectStore(config.mongodbUri, config.mongodbDb).catch((err: unknown) => {
      throw storeUnreachable(err, config.mongodbUri, loaded.embeddedStore);
    });
    cleanup.push(() => store.close());

    const chain = new ChainClient({
      rpcUrl: config.rpcUrl,
      chainId: config.chainId,
      operatorPrivateKey: config.operatorPrivateKey,
      factoryAddress: config.factoryAddress,
      usdcAddress: config.usdcAddress,
      pollingIntervalMs: embeddedChain ? 100 : 1_000,
      rpcTimeoutMs: config.rpcTimeoutMs,
    });
    cleanup.push(() => chain.destroy());

    const { instanceId } = config;
    const heartbeats = new Heartbeats(store, instanceId, {
      intervalMs: config.heartbeatMs,
      staleMs: config.heartbeatStaleMs,
      clock: opts.clock,
    });
    const leases = new Leases(store, instanceId, opts.clock, () => heartbeats.dead());
    const freed = await leases.releaseAllOf();
    if (freed) logger.warn({ instanceId, freed }, "freed the leases a previous run under this instance id left");

    const walletKey = config.walletEncryptionKey;
    const urls = { base: config.baseUrl ?? "", dashboard: config.dashboardUrl ?? "" };
    await ensureWebhookIndexes(store);
    const outbox = new WebhookOutbox(store, logger);
    const services = createServices({
      config,
      urls,
      store,
      chain,
      wallets: new LocalWalletProvider(store.walletKeys, walletKey),
      keys: new KeyService(store.apiKeys, config.walletEncryptionKey, { cacheMs: config.apiKeyCacheMs }),
      facilitator: createFacilitator({
        url: config.facilitatorUrl,
        rpcUrl: config.rpcUrl,
        chainId: config.chainId,
        privateKey: config.facilitatorPrivateKey,
      }),
      signatures: new SignatureService(
        (signer, digest, signature) => chain.factory.isValidSignatureNow(signer, digest, signature),
        store.usedSignatures,
        config.signatureWindowSeconds,
      ),
      gas: new GasMeter(store, config),
      activationSecret: createHash("sha256").update(`spendgate activation codes\n${walletKey}`).digest(),
      agentLock: new DistributedMutex(leases, "agent", config.lockLeaseMs),
      instanceId,
      leases,
      webhooks: outbox,
      logger,
    });
    // Owner alerts: deliveries left pending by a previous run are sent as soon as the worker starts.
    const webhookRules = { allowHttp: config.allowHttpSellers, allowPrivate: config.allowPrivateSellers };
    const webhookKey = webhookSecretKey(walletKey);
    const webhooks = {
      outbox,
      service: new WebhookService(outbox, webhookKey, webhookRules),
      worker: new WebhookWorker(
        outbox,
        webhookKey,
        { ...webhookRules, timeoutMs: config.webhookTimeoutMs, backoffBaseMs: config.webhookBackoffBaseMs, pollMs: config.webhookPollMs },
        logger,
      ),
    };
    webhooks.worker.start();
    cleanup.push(async () => {
      await outbox.idle();
      await webhooks.worker.stop();
    });
    // Alerts are told after the answer: facts a crash kept from being told are found again (the last hour at start).
    let alertsCheckedAt = new Date(Date.now() - 3_600_000);
    const alertSweep = setInterval(() => {
      const since = new Date(alertsCheckedAt.getTime() - 60_000);
      alertsCheckedAt = new Date();
      catchUpAlerts(services.ctx, since).catch((err: unknown) => logger.error({ err }, "webhook alert catch-up failed"));
    }, 30_000);
    alertSweep.unref();
    cleanup.push(() => clearInterval(alertSweep));

    // Nothing stays between authorise and settle: finish what a previous run left before taking new payments.
    await services.idempotency.releaseOwn();
    const recovered = (await services.settlement.recover(new Date(), { own: true })) + (await services.approvals.recover());
    if (recovered) logger.warn({ recovered }, "resolved payments interrupted by a previous run");
    const sweep = setInterval(
      () => {
        services.approvals.expire().catch((err: unknown) => logger.error({ err }, "approval expiry failed"));
        // Payments whose instance stopped mid-way (lease expired) are finished here, not only at start-up.
        services.settlement.recover().catch((err: unknown) => logger.error({ err }, "payment recovery failed"));
      },
      Math.min(30_000, Math.max(1_000, Math.floor(config.paymentLeaseMs / 2))),
    );
    sweep.unref();
    cleanup.push(() => clearInterval(sweep));
    // A peer whose heartbeat went stale: its payments in flight are fenced on-chain and finished here at once.
    heartbeats.onDead = (dead) => takeOverDead(services.ctx, () => services.settlement.recover(), dead);
    await heartbeats.start();
    cleanup.push(() => heartbeats.stop());

    const indexer = new Indexer({
      chain,
      store,
      chainId: config.chainId,
      confirmations: config.confirmations,
      startBlock: config.factoryDeployBlock,
      logger,
      onConfirmed: (events) => alertChainEvents(services.ctx, events),
    });
    // One indexer at a time across the instances sharing the database: the lease's holder indexes, the others wait.
    const indexerLease = new LeaderLease(leases, `indexer:${config.chainId}`, config.lockLeaseMs);
    // Embedded: catch up before serving (tests read the ledger's confirmations at once). Production: a first
    // catch-up over many blocks must not hold the API back; the loop does it.
    if (config.embeddedChain && (await indexerLease.hold())) await indexer.syncOnce();
    indexer.start(config.embeddedChain ? 500 : 2000, () => indexerLease.hold());
    cleanup.push(() => indexer.stop().then(() => indexerLease.release()));

    const app = createApp({ services, logger, webhooks: webhooks.service });
    const server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.port, config.host, () => resolve(s));
      s.once("error", reject);
    });
    server.requestTimeout = 120_000;
    answerClientErrors(server);
    answerConnect(server);
    const { port } = server.address() as AddressInfo;
    const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
    urls.base = config.baseUrl ?? url;
    urls.dashboard = config.dashboardUrl ?? urls.base;

    let closed = false;
    return {
      url,
      config,
      services,
      store,
      chain,
      indexer,
      heartbeats,
      webhooks,
      indexerLease,
      embeddedChain,
      embeddedMongo,
      logger,
      server,
      close: async (drainMs = Number.POSITIVE_INFINITY) => {
        if (closed) return;
        closed = true;
        // Requests already running keep their handler; a new one on a kept-alive connection is refused.
        server.removeAllListeners("request");
        server.on("request", refuseWhileStopping);
        const drained = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        const bound = Number.isFinite(drainMs) ? new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs))) : drained;
        await Promise.race([drained, bound]);
        clearTimeout(timer);
        server.closeAllConnections();
        await undo();
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}
