/** What every service gets: config, store, chain, custody, and the shared helpers. */
import type { Filter } from "mongodb";
import type { Logger } from "pino";
import type { ChainClient } from "../chain/client";
import type { Config } from "../config";
import type { Store } from "../store";
import type { HeldLease, Leases } from "../store/leases";
import type { WalletProvider } from "../wallets/provider";
import type { Facilitator } from "../x402/facilitator";
import type { KeyService } from "./keys";
import type { GasMeter } from "./gas";
import type { SignatureService } from "./signatures";
import type { WebhookOutbox } from "../webhooks/outbox";
import type { Telemetry } from "../telemetry";

export type NetworkScope = Pick<Filter<{ network?: string }>, "network">;

/** The scope of network `name` of `config.networks` (see ServiceContext.networkScope). */
export function networkScopeOf(config: Pick<Config, "networks">, name: string): NetworkScope {
  // null matches a document without the field (MongoDB's $in); the driver's types know no null for an optional field.
  return config.networks[0].name === name ? ({ network: { $in: [name, null] } } as unknown as NetworkScope) : { network: name };
}

export interface ServiceContext {
  /** This network's view of the configuration (its chain id, RPC, USDC, factory...; src/config.ts networkView). */
  config: Config;
  /** Public URLs, resolved once the server listens. */
  urls: { base: string; dashboard: string };
  store: Store;
  /** This network's chain. */
  chain: ChainClient;
  /**
   * The filter of this network's documents among those that name one (payments): `network` is this network, or,
   * for the first network, absent (written before networks were recorded). Jobs that scan the store use it.
   */
  networkScope: NetworkScope;
  wallets: WalletProvider;
  keys: KeyService;
  facilitator: Facilitator;
  signatures: SignatureService;
  /** The operator's gas, charged per owner against a daily allowance. */
  gas: GasMeter;
  /** Key of the agents' activation codes (derived from the wallet encryption key). */
  activationSecret: Buffer;
  /** Serialises work per agent (payments, policy changes) across instances; different agents run in parallel. */
  agentLock: {
    /** `fenced`: every effect of the task that needs the lock goes through its hold (DistributedMutex.run). */
    run<T>(key: string, task: (lock: HeldLease) => Promise<T>, opts?: { fenced?: boolean }): Promise<T>;
    /** In this process's queue for `key` only, without the lease (a voucher: DistributedMutex.runHere). */
    runHere<T>(key: string, task: () => Promise<T>): Promise<T>;
    busy(key: string): boolean;
    /** Resolves once the leases of the runs that have ended are freed (each is freed just after its answer). */
    settled(): Promise<void>;
  };
  /** This instance's id (INSTANCE_ID, default its operator address): in-flight payments carry it. */
  instanceId: string;
  /** Leases in the database, held under instanceId. */
  leases: Leases;
  /** Owner alerts: facts told here are delivered to the owner's webhook endpoints. */
  webhooks: WebhookOutbox;
  /** Metrics and traces: payments, their steps and outcomes (src/telemetry). */
  telemetry: Telemetry;
  logger: Logger;
}
