/** Health: /health (the store and the chain answer), /health/live (the process), /health/ready (may take traffic). */
import { z } from "zod";
import { indexerLag } from "../../indexer/indexer";
import { unavailable, type AppError } from "../../errors";
import type { Services } from "../../services";
import type { NetworkServices } from "../../services/networks";
import { HealthResponse, LiveResponse, ReadyResponse, type ReadyChecks } from "../../schemas/system";
import { VERSION, buildCommit } from "../../version";
import { json, operation, reply } from "../../api/operation";

/** The longest any one check of a health route waits: a dependency that hangs is reported, never waited for. */
const CHECK_MS = 3_000;
const started = Date.now();

function within<T>(p: Promise<T>, ms = CHECK_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function build(s: Services) {
  const commit = buildCommit(s.ctx.config.gitCommit);
  return { version: VERSION, ...(commit ? { commit } : {}) };
}

/** A network's chain id and head, bounded by CHECK_MS. */
async function probeChain(s: Services) {
  const chain = await within(Promise.all([s.ctx.chain.provider.send("eth_chainId", []), s.ctx.chain.provider.getBlockNumber()])).then(
    (v) => v,
    () => null,
  );
  const c = s.ctx.config;
  return {
    name: c.networkName,
    chainId: c.chainId,
    chain: chain !== null && Number(chain[0]) === c.chainId ? ("ok" as const) : ("unreachable" as const),
    blockNumber: chain?.[1] ?? null,
    factory: c.factoryAddress,
    usdc: c.usdcAddress,
  };
}

/** The store's ping, and every network's chain, each bounded by CHECK_MS. */
async function probe(networks: NetworkServices) {
  const [store, chains] = await Promise.all([
    within(networks.first.ctx.store.ping()).then(
      () => true,
      () => false,
    ),
    Promise.all(networks.all.map((s) => probeChain(s))),
  ]);
  return { storeOk: store, chainOk: chains.every((c) => c.chain === "ok"), chains, blockNumber: chains[0].blockNumber };
}

async function readiness(networks: NetworkServices): Promise<ReadyChecks> {
  const { storeOk, chainOk, chains, blockNumber } = await probe(networks);
  const maxIndexerLag = networks.first.ctx.config.readyMaxIndexerLag;
  let lag: number | null = null;
  if (storeOk && chains.every((c) => c.blockNumber !== null)) {
    // The network furthest behind.
    const lags = await Promise.all(
      networks.all.map((s, i) =>
        within(indexerLag(s.ctx.store, s.ctx.config.chainId, s.ctx.config.factoryDeployBlock, chains[i].blockNumber ?? 0)).catch(
          () => null,
        ),
      ),
    );
    lag = lags.some((l) => l === null) ? null : Math.max(...(lags as number[]));
  }
  const behind = maxIndexerLag > 0 && lag !== null && lag > maxIndexerLag;
  return {
    store: storeOk ? "ok" : "unreachable",
    chain: chainOk ? "ok" : "unreachable",
    indexer: behind ? "behind" : "ok",
    blockNumber,
    indexerLag: lag,
    maxIndexerLag,
  };
}

function notReady(checks: ReadyChecks): AppError {
  const failing = [
    checks.store !== "ok" ? "the store does not answer" : null,
    checks.chain !== "ok" ? "a network's JSON-RPC does not answer (or serves another chain)" : null,
    checks.indexer !== "ok" ? `the indexer is ${checks.indexerLag} blocks behind the chain (more than ${checks.maxIndexerLag})` : null,
  ].filter((x) => x !== null);
  return unavailable(`Not ready: ${failing.join("; ")}.`, 5, checks);
}

export const SYSTEM_OPERATIONS = [
  operation({
    method: "GET",
    path: "/health",
    tag: "System",
    summary: "Health: the store and the chain answer",
    description: `Each check waits at most ${CHECK_MS / 1000} s. \`version\` is package.json's; \`commit\` the build's (GIT_COMMIT, or the source tree's git HEAD), absent when unknown.`,
    auth: "none",
    input: z.object({}),
    responses: { 200: json("healthy", HealthResponse), 503: json("degraded: the store or the chain does not answer", HealthResponse) },
    errors: [],
    handle: async ({ deps: { s, networks } }) => {
      const { storeOk, chainOk, chains, blockNumber } = await probe(networks);
      const ok = storeOk && chainOk;
      const body = {
        status: ok ? "ok" : "degraded",
        mode: s.ctx.config.embeddedChain ? "embedded" : "production",
        store: storeOk ? "ok" : "unreachable",
        chain: chainOk ? "ok" : "unreachable",
        networks: chains,
        chainId: s.ctx.config.chainId,
        blockNumber,
        factory: s.ctx.config.factoryAddress,
        usdc: s.ctx.config.usdcAddress,
        ...build(s),
      } as const;
      return ok ? reply(200, body) : reply(503, body);
    },
  }),
  operation({
    method: "GET",
    path: "/health/live",
    tag: "System",
    summary: "Liveness: the process answers (no I/O)",
    description: "Reads neither the store nor the chain: a failure here means the process itself is stuck or gone.",
    auth: "none",
    input: z.object({}),
    responses: { 200: json("the process is up", LiveResponse) },
    errors: [],
    noDependencies: true,
    handle: ({ deps: { s } }) =>
      Promise.resolve(reply(200, { status: "ok", ...build(s), uptimeSeconds: Math.floor((Date.now() - started) / 1000) } as const)),
  }),
  operation({
    method: "GET",
    path: "/health/ready",
    tag: "System",
    summary: "Readiness: the store, the chain and the indexer are fit to serve",
    description:
      `The store answers a ping, every network's chain its block number (on that network's chain id), and every network's indexer is at most READY_MAX_INDEXER_LAG blocks behind (0: not checked); each check waits at most ${CHECK_MS / 1000} s. ` +
      "Not ready: 503 `unavailable` (retryable, Retry-After) whose message names what fails and whose `details` are the checks.",
    auth: "none",
    input: z.object({}),
    responses: { 200: json("ready to serve", ReadyResponse) },
    errors: ["unavailable"],
    handle: async ({ deps: { networks } }) => {
      const checks = await readiness(networks);
      if (checks.store !== "ok" || checks.chain !== "ok" || checks.indexer !== "ok") throw notReady(checks);
      return reply(200, { status: "ready", ...checks } as const);
    },
  }),
];
