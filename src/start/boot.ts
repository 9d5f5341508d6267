/**
 * Boot: the sandbox where the environment names no chain or store (the one place that starts it, through
 * src/dev/index.ts), the configuration resolved once and frozen, the store, and the chain client.
 */
import { randomBytes } from "node:crypto";
import { ChainClient } from "../chain/client";
import { indexerLag } from "../indexer/indexer";
import { Telemetry } from "../telemetry";
import { VERSION } from "../version";
import { webhookCollections } from "../webhooks/outbox";
import { resolveConfig, type Config, type LoadedConfig } from "../config";
import type { Faucet } from "../api/operation";
import { sandboxFaucet, startSandboxChain, startSandboxStore, type EmbeddedChain, type EmbeddedMongo } from "../dev";
import { connectStore, type Store } from "../store";

export type { EmbeddedChain, EmbeddedMongo } from "../dev";

/** What a start undoes, in reverse, on close or on a failed start. */
export type Cleanup = (() => void | Promise<void>)[];

export interface BootOptions {
  /** Reuse a running embedded chain (tests share one per file). */
  embeddedChain?: EmbeddedChain;
  /** Start the embedded chain in its own worker thread (`npm start`); by default in this thread. */
  chainThread?: boolean;
  /** Likewise for the embedded store. */
  storeThread?: boolean;
  /** With a shared embedded chain: this instance's own operator key (one of the chain's `operators`). */
  operatorPrivateKey?: string;
}

export interface Booted {
  config: Config;
  /** This instance's metrics (GET /metrics) and traces (when an OTLP endpoint is configured). */
  telemetry: Telemetry;
  store: Store;
  chain: ChainClient;
  embeddedChain?: EmbeddedChain;
  /** The embedded store when it runs on this thread (its index layer's explain and stats are readable here). */
  embeddedMongo?: EmbeddedMongo;
  /** The dev faucet, in embedded mode only. */
  faucet?: Faucet;
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

export async function boot(loaded: LoadedConfig, opts: BootOptions, cleanup: Cleanup): Promise<Booted> {
  let embeddedChain = opts.embeddedChain;
  if (loaded.embeddedChain && !embeddedChain) {
    embeddedChain = await startSandboxChain({ port: loaded.chainPort ?? 0, thread: opts.chainThread ?? false });
    const started = embeddedChain;
    cleanup.push(() => started.close());
  }
  const embeddedStore = loaded.embeddedStore ? await startSandboxStore({ thread: opts.storeThread ?? false }) : undefined;
  if (embeddedStore) cleanup.push(() => embeddedStore.stop());
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

  // Metrics and traces of this instance (src/telemetry). The probes are read on each scrape, once all is running.
  const deliveries = webhookCollections(store).deliveries;
  const telemetry: Telemetry = new Telemetry(
    {
      indexerLag: async (): Promise<number> =>
        indexerLag(store, config.chainId, config.factoryDeployBlock, await chain.provider.getBlockNumber()),
      webhookQueue: () => deliveries.countDocuments({ status: "pending" }),
    },
    config.otlpTracesUrl
      ? {
          url: config.otlpTracesUrl,
          headers: config.otlpHeaders,
          serviceName: config.serviceName,
          version: VERSION,
          instanceId: config.instanceId,
        }
      : undefined,
  );
  // Last to close: the spans of everything that stopped before it are sent.
  cleanup.push(() => telemetry.close());

  const chain: ChainClient = new ChainClient({
    rpcObserver: telemetry.metrics,
    rpcTimeoutMs: config.rpcTimeoutMs,
    rpcUrl: config.rpcUrl,
    chainId: config.chainId,
    operatorPrivateKey: config.operatorPrivateKey,
    factoryAddress: config.factoryAddress,
    usdcAddress: config.usdcAddress,
    pollingIntervalMs: embeddedChain ? 100 : 1_000,
  });
  cleanup.push(() => chain.destroy());
  const faucet = config.embeddedChain ? sandboxFaucet(chain) : undefined;
  return { config, telemetry, store, chain, embeddedChain, embeddedMongo: embeddedStore?.mongo, faucet };
}
