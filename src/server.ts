/**
 * Starts the whole service in four steps (src/start/): boot (the embedded chain and store where the environment names
 * none, the configuration resolved once and frozen, store, chain), wiring (the services), background jobs (recovery,
 * sweeps, webhooks, the indexer) and listen. Used by src/index.ts and by the test stack, so both run the same wiring.
 */
import type { Server } from "node:http";
import pino, { type Logger } from "pino";
import type { ChainClient } from "./chain/client";
import type { Config, LoadedConfig } from "./config";
import type { Indexer } from "./indexer/indexer";
import type { Services } from "./services";
import type { NetworkServices } from "./services/networks";
import { boot, type BootOptions, type BootedNetwork, type Cleanup, type EmbeddedChain, type EmbeddedMongo } from "./start/boot";
import { startJobs, type NetworkIndexer } from "./start/jobs";
import { listen, stopListening } from "./start/listen";
import { wire, type Webhooks } from "./start/wiring";
import type { Store } from "./store";
import type { LeaderLease } from "./store/leases";
import type { Heartbeats } from "./store/heartbeats";
import type { Telemetry } from "./telemetry";

export { storeUnreachable } from "./start/boot";

/** One network of the running service: its configuration, chain, services and indexer. */
export type RunningNetwork = BootedNetwork & NetworkIndexer & { services: Services };

export interface RunningService {
  url: string;
  config: Config;
  /** The first network's services (and chain, indexer, embedded chain below). */
  services: Services;
  /** Every network's services, and which serve an agent. */
  networkServices: NetworkServices;
  /** Every network run, the first one first. */
  networks: readonly RunningNetwork[];
  store: Store;
  chain: ChainClient;
  indexer: Indexer;
  webhooks: Webhooks;
  /** Whether this instance is the one indexing (several instances share the database). */
  indexerLease: LeaderLease;
  embeddedChain?: EmbeddedChain;
  /** The embedded store when it runs on this thread (its index layer's explain and stats are readable here). */
  embeddedMongo?: EmbeddedMongo;
  /** This instance's heartbeat, and its view of which peers are dead. */
  heartbeats: Heartbeats;
  /** This instance's metrics (GET /metrics) and traces (when an OTLP endpoint is configured). */
  telemetry: Telemetry;
  logger: Logger;
  server: Server;
  /**
   * Stops: no new connections (the port is free at once) and a 503 for new requests on open ones; waits for the
   * requests in flight (payments included) up to `drainMs` (default: for as long as they take), then closes every
   * connection, the indexer, the workers, the store and the chain.
   */
  close(drainMs?: number): Promise<void>;
}

export interface StartOptions extends BootOptions {
  logger?: Logger;
  /** The clock leases are measured with (tests move one instance's to play a stall of another). */
  clock?: () => number;
}

export async function startService(loaded: LoadedConfig, opts: StartOptions = {}): Promise<RunningService> {
  const logger = opts.logger ?? pino({ level: loaded.logLevel, redact: ["req.headers.authorization", "*.privateKey", "*.apiKey"] });
  // Undone in reverse on close or on a failed start; each step runs even if one before it failed.
  const cleanup: Cleanup = [];
  const undo = async () => {
    for (const fn of cleanup.reverse())
      await Promise.resolve()
        .then(fn)
        .catch(() => undefined);
  };
  try {
    const booted = await boot(loaded, opts, cleanup);
    const wired = await wire(booted, logger, cleanup, opts.clock);
    const { indexer, indexerLease, indexers } = await startJobs(booted, wired, logger, cleanup);
    const { server, url } = await listen(booted, wired, logger);
    const { config, store, chain, embeddedChain, embeddedMongo, telemetry } = booted;
    let closed = false;
    return {
      url,
      config,
      services: wired.services,
      networkServices: wired.networks,
      networks: booted.networks.map((n, i) => ({ ...n, ...indexers[i], services: wired.networks.all[i] })),
      store,
      chain,
      indexer,
      webhooks: wired.webhooks,
      indexerLease,
      embeddedChain,
      embeddedMongo,
      heartbeats: wired.heartbeats,
      telemetry,
      logger,
      server,
      close: async (drainMs = Number.POSITIVE_INFINITY) => {
        if (closed) return;
        closed = true;
        await stopListening(server, drainMs);
        await undo();
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}
