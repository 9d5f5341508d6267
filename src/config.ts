/** Configuration: one zod schema over the environment, parsed once (every problem listed at once), resolved once into a frozen Config. */
import { z } from "zod";
import { join } from "node:path";
import { PROJECT_ROOT } from "./paths";
import { computeAddress, isAddress, getAddress, isHexString } from "ethers";
import { randomBytes } from "node:crypto";

import { BASE_USDC } from "./chain/addresses";
import { DEFAULT_NETWORK, type NetworkName } from "./chain/networks";
import {
  NETWORK_ENV,
  type EmbeddedChainParts,
  type NetworkSettings,
  type ResolvedNetwork,
  factoryFromDeployments,
  hasRpcUrls,
  networkFields,
  networkProblems,
  networkSettings,
  resolveNetwork,
  selectedNetworks,
} from "./configNetworks";

export { BASE_USDC };
export type { EmbeddedChainParts, NetworkSettings, ResolvedNetwork };

const bool = z.enum(["true", "false", "1", "0", "yes", "no"]).transform((v) => v === "true" || v === "1" || v === "yes");
const privateKey = z.string().refine((v): boolean => isHexString(v, 32), "must be a 0x-prefixed 32-byte hex private key");
const address = z
  .string()
  .refine((v) => isAddress(v), "must be a 0x address")
  .transform((v) => getAddress(v));
const url = z.url({ protocol: /^https?$/ });

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8402),
  HOST: z.string().min(1).default("127.0.0.1"),
  BASE_URL: url.optional(),
  DASHBOARD_URL: url.optional(),
  TRUST_PROXY: bool.default(false),
  TRUSTED_PROXY_HOPS: z.coerce.number().int().min(0).max(10).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),

  ...NETWORK_ENV,
  RPC_URL: url.optional(),
  USDC_ADDRESS: address.optional(),
  FACTORY_ADDRESS: address.optional(),
  FACTORY_DEPLOY_BLOCK: z.coerce.number().int().min(0).optional(),
  OPERATOR_PRIVATE_KEY: privateKey.optional(),
  CONFIRMATIONS: z.coerce.number().int().min(0).max(64).optional(),
  EXPLORER_URL: url.optional(),

  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, "must be a mongodb:// or mongodb+srv:// URI")
    .optional(),
  MONGODB_DB: z.string().min(1).default("spendgate"),
  WALLET_ENCRYPTION_KEY: z
    .string()
    .refine((v) => isHexString(v, 32) || /^[0-9a-fA-F]{64}$/.test(v), "must be 32 bytes as 64 hex characters")
    .optional(),

  FACILITATOR_URL: url.optional(),
  UNISWAP_QUOTER_V2: address.optional(),
  FACILITATOR_PRIVATE_KEY: privateKey.optional(),

  GENESIS_OPEN: bool.optional(),
  REGISTRATION_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  OWNER_ALLOWLIST: z
    .string()
    .refine((v) => v.split(",").every((a) => isAddress(a.trim())), "must be comma-separated 0x addresses")
    .transform((v) => v.split(",").map((a) => getAddress(a.trim())))
    .optional(),
  ALLOW_PRIVATE_SELLERS: bool.optional(),
  ALLOW_HTTP_SELLERS: bool.optional(),
  APPROVAL_TTL: z.coerce.number().int().min(60).default(86_400),
  OWNER_KEY_TTL: z.coerce.number().int().min(60).default(43_200),
  SIGNATURE_WINDOW: z.coerce.number().int().min(30).max(900).default(300),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(300),
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(100),
  API_KEY_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
  PAYMENT_LEASE_MS: z.coerce.number().int().min(1).default(180_000),
  INSTANCE_ID: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,64}$/, "must be 1-64 letters, digits, dots, dashes, colons or underscores")
    .optional(),
  LOCK_LEASE_MS: z.coerce.number().int().min(200).default(30_000),
  HEARTBEAT_MS: z.coerce.number().int().min(50).max(60_000).default(1_000),
  HEARTBEAT_STALE_MS: z.coerce.number().int().min(150).max(600_000).default(5_000),
  RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  READY_MAX_INDEXER_LAG: z.coerce.number().int().min(0).default(1_000),
  GIT_COMMIT: z
    .string()
    .regex(/^[0-9a-fA-F]{7,64}$/, "must be a git commit id (7-64 hex digits)")
    .optional(),
  BLOCKED_ONCHAIN_PER_HOUR: z.coerce.number().int().min(0).default(60),
  OWNER_GAS_ALLOWANCE_GWEI: z.coerce.number().positive().optional(),
  SELLER_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
  SELLER_MAX_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
  // The contract refuses authorisations valid for more than an hour.
  MAX_PAYMENT_VALIDITY_SECONDS: z.coerce.number().int().min(30).max(3_600).default(600),
  CHANNEL_DEPOSIT_REQUESTS: z.coerce.number().int().min(1).max(10_000).default(10),
  SELL_PRICE: z
    .string()
    .regex(/^\d+(\.\d{1,6})?$/, "must be a USDC amount like 0.01")
    .default("0.01"),
  SELL_PAY_TO: address.optional(),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  WEBHOOK_BACKOFF_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).default(10_000),
  WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(600_000).default(5_000),
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(600_000).default(8_000),
  CHAIN_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url.optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, "must be comma-separated key=value pairs")
    .optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default("spendgate"),
});

/** Every variable the service reads (.env.example lists each; a test holds them together). */
/** The variables the schema reads. */
export type EnvKey = keyof typeof EnvSchema.shape;
export const ENV_KEYS = Object.keys(EnvSchema.shape) as readonly EnvKey[];

type Env = z.output<typeof EnvSchema>;

/** The service's view of the environment: names, defaults that depend on the mode, trimmed URLs. */
function configOf(e: Env) {
  // Embedded chains (one per network) unless the environment names JSON-RPC URLs (configNetworks.ts).
  const embeddedChain = !hasRpcUrls(e);
  return {
    embeddedChain,
    embeddedStore: !e.MONGODB_URI,
    port: e.PORT,
    host: e.HOST,
    baseUrl: e.BASE_URL?.replace(/\/+$/, ""),
    dashboardUrl: e.DASHBOARD_URL?.replace(/\/+$/, ""),
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
    /** How many proxies in front of the service append to X-Forwarded-For (0: use the socket's address). */
    trustedProxyHops: e.TRUSTED_PROXY_HOPS ?? (e.TRUST_PROXY ? 1 : 0),
    /** The networks run, in order: NETWORKS, else NETWORK, else base. */
    networkNames: selectedNetworks(e),
    operatorPrivateKey: e.OPERATOR_PRIVATE_KEY,
    confirmations: e.CONFIRMATIONS ?? (embeddedChain ? 0 : 3),
    mongodbUri: e.MONGODB_URI,
    mongodbDb: e.MONGODB_DB,
    walletEncryptionKey: e.WALLET_ENCRYPTION_KEY,
    facilitatorUrl: e.FACILITATOR_URL,
    facilitatorPrivateKey: e.FACILITATOR_PRIVATE_KEY,
    genesisOpen: e.GENESIS_OPEN ?? embeddedChain,
    registrationToken: e.REGISTRATION_TOKEN,
    /** Owners who may sign in while registration is closed. */
    ownerAllowlist: e.OWNER_ALLOWLIST ?? [],
    allowPrivateSellers: e.ALLOW_PRIVATE_SELLERS ?? embeddedChain,
    allowHttpSellers: e.ALLOW_HTTP_SELLERS ?? embeddedChain,
    approvalTtlSeconds: e.APPROVAL_TTL,
    ownerKeyTtlSeconds: e.OWNER_KEY_TTL,
    signatureWindowSeconds: e.SIGNATURE_WINDOW,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    /** How long a key lookup answers read-only requests on this instance without reading the store (0: never). */
    apiKeyCacheMs: e.API_KEY_CACHE_MS,
    sellerTimeoutMs: e.SELLER_TIMEOUT_MS,
    paymentLeaseMs: e.PAYMENT_LEASE_MS,
    /** This instance's id among those sharing the database (default: its operator address). */
    instanceId: e.INSTANCE_ID,
    /** How long an instance's agent locks, idempotency keys and indexer lease last without renewal. */
    lockLeaseMs: e.LOCK_LEASE_MS,
    /** How often an instance writes its heartbeat and reads its peers'. */
    heartbeatMs: e.HEARTBEAT_MS,
    /** A peer whose heartbeat did not move for this long (at least 3 beats) is dead: its work is taken over at once. */
    heartbeatStaleMs: e.HEARTBEAT_STALE_MS,
    /** Time limit of one JSON-RPC call: a node that never answers yields 503 unavailable, not a hang. */
    rpcTimeoutMs: e.RPC_TIMEOUT_MS,
    /** GET /health/ready fails past this many blocks not yet indexed (0: the indexer is not checked). */
    readyMaxIndexerLag: e.READY_MAX_INDEXER_LAG,
    /** GIT_COMMIT; the health routes fall back to the source tree's `git rev-parse HEAD`. */
    gitCommit: e.GIT_COMMIT?.toLowerCase(),
    blockedOnchainPerHour: e.BLOCKED_ONCHAIN_PER_HOUR,
    /** Operator gas (gwei) the agents of one owner may cost per UTC day. */
    // 0.01 ETH a day per owner in production (thousands of transactions on Base); the sandbox is generous.
    ownerGasAllowanceGwei: e.OWNER_GAS_ALLOWANCE_GWEI ?? (embeddedChain ? 1e12 : 1e7),
    sellerMaxBytes: e.SELLER_MAX_BYTES,
    maxPaymentValiditySeconds: e.MAX_PAYMENT_VALIDITY_SECONDS,
    channelDepositRequests: e.CHANNEL_DEPOSIT_REQUESTS,
    sellPrice: e.SELL_PRICE,
    sellPayTo: e.SELL_PAY_TO,
    /** Time limit of one webhook delivery attempt. */
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    /** Wait after the first failed webhook attempt; doubled after each further one (at most an hour), ±20% jitter. */
    webhookBackoffBaseMs: e.WEBHOOK_BACKOFF_BASE_MS,
    /** How often the webhook worker looks for due deliveries (an enqueue in this process wakes it at once). */
    webhookPollMs: e.WEBHOOK_POLL_MS,
    /** On SIGTERM, how long requests in flight (payments) may finish before everything closes. */
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    /** The embedded chain's JSON-RPC port (unset: a free one). */
    chainPort: e.CHAIN_PORT,
    /** Bearer token GET /metrics wants; unset: /metrics answers loopback clients only (src/telemetry). */
    metricsToken: e.METRICS_TOKEN,
    /** Where OTLP/HTTP traces go (the traces endpoint, or the base endpoint + /v1/traces); unset: no traces. */
    otlpTracesUrl:
      e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
      (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, "")}/v1/traces` : undefined),
    /** Headers of every OTLP request (a collector's API key), from OTEL_EXPORTER_OTLP_HEADERS. */
    otlpHeaders: otlpHeaders(e.OTEL_EXPORTER_OTLP_HEADERS ?? ""),
    serviceName: e.OTEL_SERVICE_NAME,
  };
}

/** OTEL_EXPORTER_OTLP_HEADERS as the OpenTelemetry specification reads it: `k=v` pairs, values percent-decoded. */
function otlpHeaders(list: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list.split(",")) {
    const at = pair.indexOf("=");
    if (at < 1) continue;
    const raw = pair.slice(at + 1).trim();
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {
      // not percent-encoded: taken as written
    }
    out[pair.slice(0, at).trim()] = value;
  }
  return out;
}

/** Read-only all the way down (the values are strings, numbers, booleans and lists of strings). */
export type Frozen<T> = { readonly [K in keyof T]: T[K] extends readonly (infer U)[] ? readonly U[] : T[K] };

/** The first network's fields, flat on the configuration (each network's services see their own: networkView). */
type NetworkFlat = Omit<NetworkSettings, "name"> & { networkName: NetworkName };

type Parsed = ReturnType<typeof configOf> & NetworkFlat & { networks: NetworkSettings[] };

/**
 * The environment, parsed. Complete with RPC_URL and MONGODB_URI; in embedded mode the chain and store parts come
 * from what the process starts, and resolveConfig fills them in.
 */
export type LoadedConfig = Frozen<Parsed>;

/** The parts resolveConfig makes certain, whatever the mode. */
interface Resolved {
  rpcUrl: string;
  factoryAddress: string;
  factoryDeployBlock: number;
  operatorPrivateKey: string;
  /** INSTANCE_ID, or the first network's operator address in lower case. */
  instanceId: string;
  mongodbUri: string;
  /** WALLET_ENCRYPTION_KEY, or a random one for an embedded store (which forgets the keys anyway). */
  walletEncryptionKey: string;
  /** Every network run, complete, in order; the flat chain fields are the first one's. */
  networks: readonly ResolvedNetwork[];
}

/** The configuration every part of the running service reads: complete and frozen before anything starts. */
export type Config = Frozen<Omit<Parsed, keyof Resolved> & Resolved>;

/**
 * Rules between variables. Checked on the raw strings, next to the schema and not inside it: zod skips an object's
 * refinements once a field fails, and every problem must be listed at once.
 */
function crossFieldProblems(env: Record<string, string>, deploymentsDir: string): string[] {
  const problems: string[] = networkProblems(env, deploymentsDir);
  if (hasRpcUrls(env)) {
    for (const key of ["OPERATOR_PRIVATE_KEY", "FACTORY_ADDRESS", "FACTORY_DEPLOY_BLOCK"]) {
      const hint = key.startsWith("FACTORY_") ? " (or deployments/<network>.json of the first network, written by scripts/deploy.ts)" : "";
      if (!env[key]) problems.push(`${key}: is required when RPC_URL is set${hint}`);
    }
    if (!env.MONGODB_URI) {
      problems.push(
        "MONGODB_URI: is required when RPC_URL is set (the embedded store, under a random WALLET_ENCRYPTION_KEY, loses every agent's signing key and the ledger when the process stops)",
      );
    }
    if (!env.FACILITATOR_URL && !env.FACILITATOR_PRIVATE_KEY) {
      problems.push(
        "FACILITATOR_PRIVATE_KEY: is required when RPC_URL is set and FACILITATOR_URL is not (the in-process facilitator needs its own key)",
      );
    }
    if (env.CHAIN_PORT) problems.push("CHAIN_PORT: is the embedded chain's port; with RPC_URL set there is no embedded chain");
  }
  if ((env.MONGODB_URI || hasRpcUrls(env)) && !env.WALLET_ENCRYPTION_KEY) {
    problems.push("WALLET_ENCRYPTION_KEY: is required when RPC_URL or MONGODB_URI is set (agent keys are stored encrypted under it)");
  }
  const facilitator = env.FACILITATOR_PRIVATE_KEY?.toLowerCase();
  if (facilitator && facilitator === env.OPERATOR_PRIVATE_KEY?.toLowerCase()) {
    problems.push("FACILITATOR_PRIVATE_KEY: must differ from OPERATOR_PRIVATE_KEY (two senders on one key race for the nonce)");
  }
  return problems;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Where loadConfig reads deployment records (deployments/<network>.json). */
export interface LoadOptions {
  /** Default: <project root>/deployments. */
  deploymentsDir?: string;
}

/** Parses the environment; throws ConfigError naming every problem. Empty strings count as unset. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env, opts: LoadOptions = {}): LoadedConfig {
  const deploymentsDir = opts.deploymentsDir ?? join(PROJECT_ROOT, "deployments");
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(source)) if (v !== undefined && v !== "") env[k] = v;
  // The first network's factory from its deployment record when the environment names none (production only).
  const first = env.NETWORKS?.split(",")[0]?.trim() ?? env.NETWORK ?? DEFAULT_NETWORK;
  if (hasRpcUrls(env) && !env.FACTORY_ADDRESS) {
    const record = factoryFromDeployments(deploymentsDir, first);
    if (record.address) env.FACTORY_ADDRESS = record.address;
    if (record.block !== undefined) env.FACTORY_DEPLOY_BLOCK = String(record.block);
  }
  const parsed = EnvSchema.safeParse(env);
  const problems = [
    ...(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "environment"}: ${i.message}`)),
    ...crossFieldProblems(env, deploymentsDir),
  ];
  if (!parsed.success || problems.length) throw new ConfigError(problems);
  const config = configOf(parsed.data);
  const networks = networkSettings(parsed.data, deploymentsDir, config.embeddedChain);
  const { name, ...flat } = networks[0];
  return deepFreeze({ ...config, ...flat, networkName: name, networks });
}

/** What an embedded run started before resolving its configuration. */
export interface EmbeddedParts {
  /** The embedded chain of each network, in the configuration's order (started by this process or shared). */
  chains?: readonly EmbeddedChainParts[];
  /** With a shared embedded chain: this instance's own operator key on the first one (one of its `operators`). */
  operatorPrivateKey?: string;
  /** The embedded store and this run's own database in it. */
  store?: { uri: string; db: string };
}

/**
 * The one step from the parsed environment to the complete configuration: the embedded chains' addresses and keys
 * and the embedded store replace what the environment left unset. Returns a new frozen value; `loaded` is not
 * touched. Throws ConfigError if a part is still missing (loadConfig's rules make that impossible from the environment).
 */
export function resolveConfig(loaded: LoadedConfig, embedded: EmbeddedParts = {}): Config {
  const { store } = embedded;
  const results = loaded.networks.map((n, i) =>
    resolveNetwork(loaded, n, embedded.chains?.[i], i === 0 ? embedded.operatorPrivateKey : undefined),
  );
  const mongodbUri = store?.uri ?? loaded.mongodbUri;
  // The first network's names as they were (rpcUrl, ...); another network's prefixed with its name.
  const missing = [
    ...results.flatMap((r, i) =>
      r.missing.map((k) => `${i === 0 ? k : `networks.${loaded.networks[i].name}.${k}`}: unset, and no embedded chain provides it`),
    ),
    ...(mongodbUri === undefined ? ["mongodbUri: unset, and no embedded store provides it"] : []),
  ];
  const networks = results.map((r) => r.network).filter((n): n is ResolvedNetwork => n !== undefined);
  if (missing.length || mongodbUri === undefined || networks.length !== results.length) throw new ConfigError(missing);
  const { networkName, ...first } = networkFields(networks[0]);
  return deepFreeze({
    ...loaded,
    ...(store && { mongodbDb: store.db }),
    ...first,
    networkName,
    networks,
    mongodbUri,
    // Instances sharing the database tell each other apart by this id; a restart under the same id takes over its
    // predecessor's leases and in-flight payments at once.
    instanceId: loaded.instanceId ?? computeAddress(first.operatorPrivateKey).toLowerCase(),
    walletEncryptionKey: loaded.walletEncryptionKey ?? randomBytes(32).toString("hex"),
  });
}

/**
 * The configuration as the services of network `name` read it: that network's chain fields over the first one's
 * (chain id, RPC, USDC, WETH, factory, quoter, explorer, keys). The same value for the first network.
 */
export function networkView(config: Config, name: NetworkName): Config {
  const n = config.networks.find((x) => x.name === name);
  if (!n) throw new Error(`network ${name} is not run by this service (${config.networks.map((x) => x.name).join(", ")})`);
  if (n === config.networks[0]) return config;
  return deepFreeze({ ...config, ...networkFields(n) });
}

function deepFreeze<T>(value: T): Frozen<T> {
  if (typeof value === "object" && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value as Frozen<T>;
}
