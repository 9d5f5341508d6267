/**
 * What each configuration variable means, for docs/configuration.md's table (generated: `npm run docs:config`, checked by
 * test/docs/configTable.test.ts). Keyed by the config schema's own keys: a variable added to the schema without a line
 * here does not compile.
 */
import { NETWORK_LIST, type RpcUrlKey, rpcUrlKey } from "./chain/networks";
import type { EnvKey } from "./config";

export interface ConfigDoc {
  /** The default, as a reader needs it (Markdown). */
  default: string;
  meaning: string;
}

export const CONFIG_DOCS: Record<EnvKey, ConfigDoc> = {
  PORT: {
    default: "`8402`",
    meaning: "HTTP port (`0` picks a free one)",
  },
  HOST: {
    default: "`127.0.0.1`",
    meaning: "interface to bind; `0.0.0.0` behind a load balancer",
  },
  BASE_URL: {
    default: "`http://HOST:PORT`",
    meaning: "public URL of the API (SIWE domain, links in /skill.md)",
  },
  DASHBOARD_URL: {
    default: "`BASE_URL`",
    meaning: "public URL of the owner dashboard (activation links)",
  },
  LOG_LEVEL: {
    default: "`info`",
    meaning: "pino level: fatal, error, warn, info, debug, trace, silent",
  },
  TRUST_PROXY: {
    default: "`false`",
    meaning: "trust `X-Forwarded-*` (client IPs for rate limits)",
  },
  TRUSTED_PROXY_HOPS: {
    default: "`1` with `TRUST_PROXY`, else `0`",
    meaning:
      "how many proxies in front append to `X-Forwarded-For`: the client address (rate limits, failed-key counting) is the entry the last of them saw; entries a client wrote itself are never read",
  },
  NETWORK: {
    default: "`base`",
    meaning:
      "the network the service runs on, a name of the network table below (its chain id, USDC and its EIP-712 domain, WETH and Uniswap, explorer): the embedded chain of `npm start` and `npm run staging` takes its chain id and USDC address, production its addresses. Set `NETWORK` or `NETWORKS`, not both",
  },
  NETWORKS: {
    default: "unset = `NETWORK` alone",
    meaning:
      "several networks in one service, comma-separated (`base,base-sepolia`); the first is an agent's default (`network` at genesis). Each needs its `<NAME>_RPC_URL` (or none of them: one embedded chain each); every network after the first takes its factory from `deployments/<name>.json`",
  },
  RPC_URL: {
    default: "unset = embedded chain",
    meaning:
      "JSON-RPC of the (first) network's chain in production, which must answer that network's chain id; the payment path's calls made at the same moment go as one JSON-RPC batch; a node that refuses batches gets each call alone from then on",
  },
  ...(Object.fromEntries(
    NETWORK_LIST.map((n) => [
      rpcUrlKey(n.name),
      {
        default: "unset",
        meaning: `JSON-RPC of ${n.displayName} (chain id ${n.chainId}) when \`NETWORKS\` names \`${n.name}\`; also what \`npm run deploy -- --network ${n.name}\` sends to (default ${n.publicRpcUrl})`,
      },
    ]),
  ) as Record<RpcUrlKey, ConfigDoc>),
  CHAIN_PORT: {
    default: "unset = a free port",
    meaning:
      "embedded chain only: its JSON-RPC port on 127.0.0.1, fixed so that a wallet pointed at it keeps working across restarts (with `NETWORKS`, the first network's chain; the others take free ports)",
  },
  USDC_ADDRESS: {
    default: "the network's USDC (table below)",
    meaning: "the settlement token of the (first) network",
  },
  FACTORY_ADDRESS: {
    default: "from `deployments/<network>.json`",
    meaning: "the `SpendPolicyFactory` of the (first) network",
  },
  FACTORY_DEPLOY_BLOCK: {
    default: "from the deployment record",
    meaning: "first block the indexer reads on the (first) network",
  },
  UNISWAP_QUOTER_V2: {
    default: "the network's (table below; embedded: the embedded one)",
    meaning:
      "the QuoterV2 that prices a swap before settlement on the (first) network (router, WETH and Uniswap factory are fixed in the contracts); none on a network without Uniswap in the table: swaps off there",
  },
  OPERATOR_PRIVATE_KEY: {
    default: "embedded: random",
    meaning:
      "this instance's relayer key: a member of the deployment's `OperatorSet` (the factory's default operator and every policy's operator); give each instance its own",
  },
  CONFIRMATIONS: {
    default: "`0` embedded, `3` otherwise",
    meaning: "depth at which ledger entries count as confirmed",
  },
  EXPLORER_URL: {
    default: "the network's explorer (table below); embedded: the service's own `/dev/explorer`",
    meaning: "explorer links of the (first) network (`<EXPLORER_URL>/tx/<hash>`, `/address/<address>`)",
  },
  MONGODB_URI: {
    default: "unset = embedded CongoDB",
    meaning:
      "MongoDB connection string; required when `RPC_URL` is set (the embedded store forgets agents' keys and the ledger when the process stops)",
  },
  MONGODB_DB: {
    default: "`spendgate`",
    meaning: "database name",
  },
  WALLET_ENCRYPTION_KEY: {
    default: "embedded: random",
    meaning: "32 bytes as 64 hex: agent keys are encrypted with AES-256-GCM under it",
  },
  FACILITATOR_URL: {
    default: "unset = in-process",
    meaning:
      "a remote x402 facilitator (`/verify`, `/settle`, `/supported`) for the service's own paid resource (`/sell/agent-intel`); payments the service makes are settled by the seller's facilitator and checked before they leave: their fields and the token's domain, and their settlement simulated on `RPC_URL` unless the chain has answered it already (the authorisation landed, the USDC read just before covers it)",
  },
  FACILITATOR_PRIVATE_KEY: {
    default: "embedded: random",
    meaning:
      "key of the in-process facilitator; must differ from the operator's. Its settlements are sent with a 500,000 gas limit (an agent wallet's uses about 77,000; only what is used is paid) after one simulation with that limit, so a payer whose wallet would need more, or whose settlement would revert, is refused and nothing is sent",
  },
  GENESIS_OPEN: {
    default: "`true` embedded, `false` otherwise",
    meaning: "allow `POST /wallet/genesis` without a key",
  },
  REGISTRATION_TOKEN: {
    default: "unset",
    meaning: "an operator token accepted as Bearer for genesis, and for a new owner's SIWE sign-in, when registration is closed",
  },
  OWNER_GAS_ALLOWANCE_GWEI: {
    default: "`1e7` (0.01 ETH; `1e12` embedded)",
    meaning:
      "operator gas the agents of one owner may cost per UTC day; past it, deploys, policy updates, authorisations and on-chain blocked records for them answer 429 `gas_allowance_exceeded` (pauses, withdrawals and hand-overs never); `GET /owner/gas` shows the figures. Each relayed transaction is checked before it is sent and charged once mined, so the last one goes past it by its own cost. With several instances, one may also go past it by what the others charged in the 1 s before its check, or by what they charged beyond half of it in the 10 s before (the check stands on the total its instance last read or charged, dated from when that read or charge was sent: less than 1 s old, or 10 s while that total leaves more than half the allowance)",
  },
  OWNER_ALLOWLIST: {
    default: "unset",
    meaning:
      "comma-separated owner addresses that may sign in for the first time while registration is closed (`GENESIS_OPEN=false`); owners SpendGate already knows always may",
  },
  ALLOW_PRIVATE_SELLERS: {
    default: "`true` embedded, `false` otherwise",
    meaning: "allow sellers on private, loopback and link-local addresses",
  },
  APPROVAL_TTL: {
    default: "`86400`",
    meaning: "seconds a pending approval waits before it expires",
  },
  OWNER_KEY_TTL: {
    default: "`43200`",
    meaning: "lifetime in seconds of an owner key from SIWE sign-in",
  },
  SIGNATURE_WINDOW: {
    default: "`300`",
    meaning: "\u00b1 seconds between a signed timestamp and the server clock",
  },
  RATE_LIMIT_PER_MINUTE: {
    default: "`300`",
    meaning: "requests per key (or per IP without a key) per minute; 429 past it",
  },
  AUTH_FAILURES_PER_MINUTE: {
    default: "`100`",
    meaning:
      "failed authentications per client address per minute; past it every keyed request from that address gets 429 for the rest of the minute",
  },
  API_KEY_CACHE_MS: {
    default: "`1000`",
    meaning:
      "how long an instance answers reads (`GET /ledger`, `/ledger/:id`, `/limits`, `/approvals`, and the read-only MCP tools) from a key lookup it made, without reading the key again, and payments (`POST /pay`, MCP `pay`) for at most 1 s of it, then, for up to 10 s, while no key was revoked anywhere since (the store's revocation mark, read again once its last read is that old: docs/contracts.md); `0` reads it every time. A revoked key is refused at once on the instance that revoked it, and on every instance by anything else that changes something; other instances may still answer its payments for up to 1 s, its reads for this long",
  },
  PAYMENT_LEASE_MS: {
    default: "`180000`",
    meaning:
      "how long an instance owns a payment in flight; past it (a crash) another instance's recovery finishes the payment from chain state (its sweep runs every 5 s, or half the lease if shorter; a recovery that could not finish, with the chain or the store out of reach, leaves the payment to be tried again within 2 s); an instance restarted under the same `INSTANCE_ID` finishes its own at start-up without waiting. A payment whose authorisation was never seen mined (never sent, or still to come from a stalled instance) is voided on-chain (`voidUnrecordedPayment`, gas charged to the owner like a release) and called failed at once: from then on its authorisation can only revert. Only where no void can be sent (a policy implementation from before it) is it called failed once the chain is past its transfer's `validBefore`, at most `MAX_PAYMENT_VALIDITY_SECONDS` after signing (judged by the time the node would give its next block)",
  },
  INSTANCE_ID: {
    default: "the operator address",
    meaning:
      "this instance's name among the instances sharing the database (in-flight payments, idempotency keys and leases carry it); unique per running process",
  },
  LOCK_LEASE_MS: {
    default: "`30000`",
    meaning:
      "how long an instance's database leases last without renewal (renewed every third of it while held): an agent's payment lock (one payment per agent at a time across instances), an `Idempotency-Key` being run, and the indexer (one instance indexes at a time); a dead instance's leases pass to the others when they expire",
  },
  READY_MAX_INDEXER_LAG: {
    default: "`1000`",
    meaning: "`GET /health/ready` answers 503 when the indexer has more blocks than this still to read (`0`: the indexer is not checked)",
  },
  GIT_COMMIT: {
    default: "the source tree's `git rev-parse HEAD`, if any",
    meaning: "the build's commit, shown by `/health` and `/health/live` (absent when unknown)",
  },
  BLOCKED_ONCHAIN_PER_HOUR: {
    default: "`60`",
    meaning:
      "blocked attempts per agent per hour recorded on-chain (at the operator's gas cost; an attempt whose transaction failed counts too); past it refusals go to the ledger only",
  },
  SELLER_TIMEOUT_MS: {
    default: "`15000`",
    meaning: "time limit of every request to a seller",
  },
  ALLOW_HTTP_SELLERS: {
    default: "`true` embedded, `false` otherwise",
    meaning: "pay plain-http sellers; https sellers are never followed down to http",
  },
  SELLER_MAX_BYTES: {
    default: "`1048576`",
    meaning: "size limit of a seller's response",
  },
  MAX_PAYMENT_VALIDITY_SECONDS: {
    default: "`600`",
    meaning:
      "the longest an agent's signed EIP-3009 authorisation stays valid, whatever the seller asks (30-3600; the contract refuses more than an hour)",
  },
  CHANNEL_DEPOSIT_REQUESTS: {
    default: "`10`",
    meaning:
      "a batch-settlement channel is opened (or topped up) with this many requests' price, or less when the policy would not allow that much in one deposit (each deposit is authorised on-chain like a payment and counts against the budgets until refunded)",
  },
  SELL_PRICE: {
    default: "`0.01`",
    meaning: "price in USDC of `/sell/agent-intel`",
  },
  SELL_PAY_TO: {
    default: "the operator address",
    meaning: "receiver of `/sell/agent-intel` payments",
  },
  WEBHOOK_TIMEOUT_MS: {
    default: "`10000`",
    meaning: "time limit of one webhook delivery attempt (100-60000)",
  },
  WEBHOOK_BACKOFF_BASE_MS: {
    default: "`10000`",
    meaning:
      "wait after a delivery's first failed attempt, doubled after each further failure (at most an hour, \u00b120% jitter); retried for 24 h",
  },
  WEBHOOK_POLL_MS: {
    default: "`5000`",
    meaning: "how often each instance looks for due deliveries (an event raised in the same process is sent at once)",
  },
  SHUTDOWN_DRAIN_MS: {
    default: "`8000`",
    meaning:
      "on SIGTERM or SIGINT: the port is closed at once, new requests on open connections get 503 `unavailable`, and the requests in flight (payments) get this long to finish before the connections, workers, store and chain close and the process exits 0. A payment cut off past it is finished from chain state at the next start under the same `INSTANCE_ID` (or by another instance once its lease has passed)",
  },
  METRICS_TOKEN: {
    default: "unset = loopback only",
    meaning:
      "Bearer token `GET /metrics` wants (at least 16 characters). Unset, `/metrics` answers only clients on the loopback interface whose request carries no `X-Forwarded-For`, `Forwarded` or `X-Real-IP` (403 otherwise): set it when Prometheus scrapes from another machine, or behind a proxy on the same machine",
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    default: "unset = no traces",
    meaning:
      "OpenTelemetry collector base URL (OTLP/HTTP, JSON); traces go to `<it>/v1/traces`. Unset (and no traces endpoint), nothing of tracing runs",
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    default: "unset",
    meaning: "the full traces URL, taken as it is (wins over the base endpoint)",
  },
  OTEL_EXPORTER_OTLP_HEADERS: {
    default: "unset",
    meaning: "headers of every OTLP request, `key=value` pairs separated by commas (values percent-decoded): a collector's API key",
  },
  OTEL_SERVICE_NAME: {
    default: "`spendgate`",
    meaning: "the traces' `service.name`",
  },
  HEARTBEAT_MS: {
    default: "`1000`",
    meaning: "how often an instance bumps its heartbeat in the database (collection `heartbeats`) and reads its peers'",
  },
  HEARTBEAT_STALE_MS: {
    default: "`5000`",
    meaning:
      "a peer whose heartbeat has not moved for this long (measured on the reader's own clock; at least three beats) is dead, whatever its `INSTANCE_ID`: its agent locks and `Idempotency-Key`s are taken over at once, and its payments in flight are fenced on-chain (an unrecorded paymentId voided, an authorised one released) and finished by a live instance within seconds, without waiting for `PAYMENT_LEASE_MS`. A peer that was only stalled and beats again cannot send what was taken over (its commit's fencing token moved on; the contract refuses a voided or released paymentId). Too small a value makes a slow peer lose its payments in flight (failed, nothing paid)",
  },
  RPC_TIMEOUT_MS: {
    default: "`10000`",
    meaning:
      "time limit of one JSON-RPC call to the chain node; a node that accepts the connection and never answers yields 503 `unavailable` (retryable) instead of a hang",
  },
};

/** docs/configuration.md's configuration table, from CONFIG_DOCS in the schema's order. */
export function configTable(keys: readonly EnvKey[]): string {
  const rows = keys.map((k) => `| \`${k}\` | ${CONFIG_DOCS[k].default} | ${CONFIG_DOCS[k].meaning} |`);
  return ["| variable | default | meaning |", "|---|---|---|", ...rows].join("\n");
}

/** docs/configuration.md's network table, from the code's (src/chain/networks.ts). */
export function networkTable(): string {
  const rows = NETWORK_LIST.map((n) => {
    const swaps = n.uniswap && n.weth ? `WETH \`${n.weth}\`, SwapRouter02 \`${n.uniswap.swapRouter02}\`` : "off";
    return `| \`${n.name}\` | ${n.displayName} | ${n.chainId} | \`${n.caip2}\` / ${n.x402V1 ? `\`${n.x402V1}\`` : "none"} | \`${n.usdc.address}\` "${n.usdc.name}" / "${n.usdc.version}" | ${swaps} | ${n.explorer} |`;
  });
  return [
    "| `NETWORK` | network | chain id | x402 v2 / v1 | USDC, EIP-712 name / version | swaps (Uniswap v3) | explorer |",
    "|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}
