/**
 * Entry point: `npm start` (node itself, so a supervisor's SIGTERM reaches it) and `npm run start:prod`. Embedded mode
 * (no RPC_URL, no MONGODB_URI) needs no setup at all.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError, loadConfig } from "./config";
import { startService, type RunningNetwork } from "./server";
import { portProblem, sandboxRefusal } from "./start/preflight";
import { redactUrl } from "./util/redact";

/** `.env` of the working directory, when there is one; variables already set win over it. */
function loadEnvFile(): string | null {
  const file = resolve(".env");
  if (!existsSync(file)) return null;
  process.loadEnvFile(file);
  return file;
}

/** What the start-up banner says of one network. */
function networkLines(n: RunningNetwork, embedded: boolean): string[] {
  const c = n.config;
  const e = n.embeddedChain;
  const u = e?.addresses.uniswap;
  return [
    `  network:      ${n.name} (chain id ${c.chainId})${embedded ? ", a sandbox: not the real network" : ""}`,
    `    chain RPC:  ${embedded ? c.rpcUrl : redactUrl(c.rpcUrl)}`,
    `    USDC:       ${c.usdcAddress}`,
    `    factory:    ${c.factoryAddress}`,
    e ? `    multicall3: ${e.addresses.multicall3}` : "",
    e
      ? u
        ? `    Uniswap v3: SwapRouter02 ${u.swapRouter02}, QuoterV2 ${u.quoterV2}, USDC/WETH 0.05% pool ${u.usdcWethPool} (WETH ${u.weth})`
        : "    Uniswap v3: none on this network (swaps off)"
      : "",
    `    operator:   ${n.chain.operator.address}`,
  ];
}

async function main(): Promise<void> {
  let config;
  let envFile: string | null = null;
  try {
    envFile = loadEnvFile();
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  if (envFile) console.log(`Read the environment from ${envFile} (variables already set take precedence).`);
  // Compiled (dist/src/index.js: npm run start:prod, the container), never the sandbox by mistake.
  const refusal = sandboxRefusal(config, process.env, __filename.endsWith(".js"));
  const inUse = refusal ?? (await portProblem(config.host, config.port));
  if (inUse) {
    console.error(inUse);
    process.exit(2);
  }
  const names = config.networkNames.join(", ");
  console.log(
    config.embeddedChain
      ? `Starting SpendGate in embedded mode: a local chain of ${names} with USDC, Uniswap (where the network has it) and the contracts, an in-memory database, then the API…`
      : `Starting SpendGate on ${names}: ${config.embeddedStore ? "the embedded database" : "MongoDB (MONGODB_URI)"}, the chain at ${redactUrl(config.rpcUrl ?? "")}, then the API…`,
  );
  // The embedded chain and store get threads of their own: their work stays off the service's event loop (2 cores).
  const svc = await startService(config, { chainThread: true, storeThread: true });
  const c = svc.config;
  const lines = [
    "",
    `SpendGate is running at ${svc.services.ctx.urls.base}`,
    c.embeddedChain
      ? "  EMBEDDED MODE: a sandbox with a local chain per network and an in-memory database (each in its own thread). Nothing persists."
      : "",
    c.embeddedChain
      ? "  memory:       the embedded chain keeps every block in memory (about 32 KiB a block, 0.1 MiB a payment: ~1 GiB per 10,000 payments); restart to reset it"
      : "",
    `  API:          ${svc.services.ctx.urls.base}`,
    `  dashboard:    ${svc.services.ctx.urls.dashboard}`,
    `  MCP:          ${svc.services.ctx.urls.base}/mcp`,
    ...svc.networks.flatMap((n) => networkLines(n, c.embeddedChain)),
    `  database:     ${c.embeddedStore ? "embedded (in memory)" : "MONGODB_URI"}`,
    "",
  ].filter((l) => l !== "");
  console.log(lines.join("\n"));

  const drainMs = c.shutdownDrainMs;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const started = Date.now();
    svc.logger.info({ signal, drainMs }, "shutting down: no new requests; waiting for the requests in flight");
    // Should closing itself hang, leave anyway: a payment cut short is finished from the chain at the next start.
    setTimeout(() => {
      svc.logger.error({ signal }, "shutdown took too long; exiting");
      process.exit(1);
    }, drainMs + 10_000).unref();
    await svc.close(drainMs);
    svc.logger.info({ signal, ms: Date.now() - started }, "stopped");
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

main().catch((err: unknown) => {
  console.error("SpendGate failed to start:", err instanceof Error ? err.message : err);
  process.exit(1);
});
