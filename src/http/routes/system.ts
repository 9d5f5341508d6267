/** Health: /health (the store and the chain answer), /health/live (the process), /health/ready (may take traffic). */
import { z } from "zod";
import { indexerLag } from "../../indexer/indexer";
import { unavailable, type AppError } from "../../errors";
import type { Services } from "../../services";
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

/** The store's ping, and the chain's id and head, each bounded by CHECK_MS. */
async function probe(s: Services) {
  const [store, chain] = await Promise.allSettled([
    within(s.ctx.store.ping()),
    within(Promise.all([s.ctx.chain.provider.send("eth_chainId", []), s.ctx.chain.provider.getBlockNumber()])),
  ]);
  const chainOk = chain.status === "fulfilled" && Number(chain.value[0]) === s.ctx.config.chainId;
  return {
    storeOk: store.status === "fulfilled",
    chainOk,
    blockNumber: chain.status === "fulfilled" ? chain.value[1] : null,
  };
}

async function readiness(s: Services): Promise<ReadyChecks> {
  const { storeOk, chainOk, blockNumber } = await probe(s);
  const maxIndexerLag = s.ctx.config.readyMaxIndexerLag;
  let lag: number | null = null;
  const c = s.ctx.config;
  if (storeOk && blockNumber !== null)
    lag = await within(indexerLag(s.ctx.store, c.chainId, c.factoryDeployBlock, blockNumber)).catch(() => null);
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
    checks.chain !== "ok" ? "the chain's JSON-RPC does not answer (or serves another chain)" : null,
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
    handle: async ({ deps: { s } }) => {
      const { storeOk, chainOk, blockNumber } = await probe(s);
      const ok = storeOk && chainOk;
      const body = {
        status: ok ? "ok" : "degraded",
        mode: s.ctx.config.embeddedChain ? "embedded" : "production",
        store: storeOk ? "ok" : "unreachable",
        chain: chainOk ? "ok" : "unreachable",
        chainId: s.ctx.config.chainId,
        blockNumber,
        factory: s.ctx.config.factoryAddress ?? null,
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
      `The store answers a ping, the chain its block number (on the configured chain id), and the indexer is at most READY_MAX_INDEXER_LAG blocks behind (0: not checked); each check waits at most ${CHECK_MS / 1000} s. ` +
      "Not ready: 503 `unavailable` (retryable, Retry-After) whose message names what fails and whose `details` are the checks.",
    auth: "none",
    input: z.object({}),
    responses: { 200: json("ready to serve", ReadyResponse) },
    errors: ["unavailable"],
    handle: async ({ deps: { s } }) => {
      const checks = await readiness(s);
      if (checks.store !== "ok" || checks.chain !== "ok" || checks.indexer !== "ok") throw notReady(checks);
      return reply(200, { status: "ready", ...checks } as const);
    },
  }),
];
