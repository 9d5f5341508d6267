/**
 * Boot: the sandbox where the environment names no chain or store (the one place that starts it, through
 * src/dev/index.ts: one embedded chain per network), the configuration resolved once and frozen, the store, and one
 * chain client per network (each checked to answer its network's chain id).
 */
import { randomBytes } from "node:crypto";
import { ChainClient } from "../chain/client";
import { useFastKeccak } from "../chain/keccak";
import type { NetworkName } from "../chain/networks";
import { indexerLag } from "../indexer/indexer";
import { Telemetry } from "../telemetry";
import { VERSION } from "../version";
import { webhookCollections } from "../webhooks/outbox";
import { networkView, resolveConfig, type Config, type LoadedConfig } from "../config";
import type { DemoSellers, Faucet } from "../api/operation";
import { DemoSchemeSellers, sandboxFaucet, startSandboxChains, startSandboxStore, type EmbeddedChain, type EmbeddedMongo } from "../dev";
import { connectStore, type Store } from "../store";

export type { EmbeddedChain, EmbeddedMongo } from "../dev";

/** What a start undoes, in reverse, on close or on a failed start. */
export type Cleanup = (() => void | Promise<void>)[];

export interface BootOptions {
  /** Reuse a running embedded chain for the first network (tests share one per file). */
  embeddedChain?: EmbeddedChain;
  /** Start the embedded chain in its own worker thread (`npm start`); by default in this thread. */
  chainThread?: boolean;
  /** Likewise for the embedded store. */
  storeThread?: boolean;
  /** With a shared embedded chain: this instance's own operator key (one of the chain's `operators`). */
  operatorPrivateKey?: string;
}

/** One network of the service, booted: its view of the configuration and its chain. */
export interface BootedNetwork {
  name: NetworkName;
  config: Config;
  chain: ChainClient;
  embeddedChain?: EmbeddedChain;
  /** The dev faucet of its embedded chain, in embedded mode only. */
  faucet?: Faucet;
  /** Its demo sellers of upto and batch-settlement, in embedded mode only. */
  demoSellers?: DemoSellers;
}

export interface Booted {
  config: Config;
  /** This instance's metrics (GET /metrics) and traces (when an OTLP endpoint is configured). */
  telemetry: Telemetry;
  store: Store;
  /** Every network run, the first one first. */
  networks: readonly [BootedNetwork, ...BootedNetwork[]];
  /** The first network's chain (and embedded chain, faucet). */
  chain: ChainClient;
  embeddedChain?: EmbeddedChain;
  /** The embedded store when it runs on this thread (its index layer's explain and stats are readable here). */
  embeddedMongo?: EmbeddedMongo;
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
  // ethers' keccak-256 through the faster implementation, once it hashes known inputs as ethers' own does.
  useFastKeccak();
  let embeddedChains: EmbeddedChain[] | undefined;
  if (loaded.embeddedChain) {
    const first = opts.embeddedChain;
    embeddedChains = await startSandboxChains(loaded.networkNames, {
      port: loaded.chainPort ?? 0,
      thread: opts.chainThread ?? false,
      first,
    });
    for (const started of embeddedChains) if (started !== first) cleanup.push(() => started.close());
  }
  const embeddedStore = loaded.embeddedStore ? await startSandboxStore({ thread: opts.storeThread ?? false }) : undefined;
  if (embeddedStore) cleanup.push(() => embeddedStore.stop());
  const config = resolveConfig(loaded, {
    chains: embeddedChains,
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
      // The network furthest behind.
      indexerLag: async (): Promise<number> => {
        const lags = await Promise.all(
          networks.map(async (n) =>
            indexerLag(store, n.config.chainId, n.config.factoryDeployBlock, await n.chain.provider.getBlockNumber()),
          ),
        );
        return Math.max(...lags);
      },
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

  const networks = config.networks.map((n, i): BootedNetwork => {
    const view = networkView(config, n.name);
    const chain: ChainClient = new ChainClient({
      rpcObserver: telemetry.metrics,
      rpcTimeoutMs: view.rpcTimeoutMs,
      rpcUrl: view.rpcUrl,
      chainId: view.chainId,
      operatorPrivateKey: view.operatorPrivateKey,
      factoryAddress: view.factoryAddress,
      usdcAddress: view.usdcAddress,
      pollingIntervalMs: embeddedChains ? 100 : 1_000,
    });
    cleanup.push(() => chain.destroy());
    const embeddedChain = embeddedChains?.[i];
    return {
      name: n.name,
      config: view,
      chain,
      embeddedChain,
      faucet: embeddedChain ? sandboxFaucet(chain, view.wethAddress) : undefined,
      demoSellers: embeddedChain ? new DemoSchemeSellers(view, chain) : undefined,
    };
  }) as [BootedNetwork, ...BootedNetwork[]];
  // A node of another chain would have every signature made for the wrong chain id: refused before anything starts.
  await Promise.all(networks.map((n) => checkChainId(n)));
  const [first] = networks;
  return {
    config,
    telemetry,
    store,
    networks,
    chain: first.chain,
    embeddedChain: first.embeddedChain,
    embeddedMongo: embeddedStore?.mongo,
    faucet: first.faucet,
  };
}

/** Refuses a network whose JSON-RPC answers another chain id than the network's (a node that does not answer is let be). */
async function checkChainId(n: BootedNetwork): Promise<void> {
  const answered: unknown = await n.chain.provider.send("eth_chainId", []).catch(() => null);
  if (answered === null) return; // unreachable now: the health routes say so, and every call fails until it is back
  const id = Number(answered);
  if (id !== n.config.chainId) {
    const key = n.config.networks[0].name === n.name ? "RPC_URL" : `the RPC URL of ${n.name}`;
    throw new Error(
      `${key} answers chain id ${id}, but network ${n.name} is chain ${n.config.chainId}: check NETWORK/NETWORKS and the URL.`,
    );
  }
}
