/**
 * Checks `src/index.ts` makes before anything starts: the compiled service (npm run start:prod, the container) never
 * falls back to the sandbox by mistake, and a port in use is said before the embedded chain takes a minute to boot.
 */
import { createServer } from "node:net";
import { ConfigError, loadConfig, type LoadedConfig } from "../config";

/** Every variable production needs that `env` lacks, RPC_URL apart: what the configuration check lists once it is set. */
export function productionProblems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig({ ...env, RPC_URL: env.RPC_URL || "http://127.0.0.1:8545" });
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) =>
      p
        .replace(" when RPC_URL is set and FACILITATOR_URL is not", " unless FACILITATOR_URL is set")
        .replace(/ when RPC_URL( or MONGODB_URI)? is set/, ""),
    );
  }
}

/**
 * Why the compiled service must not start with this configuration: no RPC_URL would start the sandbox (a throwaway
 * chain with an open faucet), unless SANDBOX=1 asks for it. Every production variable missing is listed at once.
 */
export function sandboxRefusal(config: LoadedConfig, env: NodeJS.ProcessEnv, compiled: boolean): string | null {
  if (!compiled || !config.embeddedChain || env.SANDBOX === "1") return null;
  return [
    "Refusing to start: RPC_URL is not set, so this would be the sandbox (a throwaway local chain with an open faucet and",
    "an in-memory database), not production. Set these (in the environment or .env; docs/production.md):",
    "  - RPC_URL: the JSON-RPC URL of a node of the network (or <NETWORK>_RPC_URL)",
    ...productionProblems(env).map((p) => `  - ${p}`),
    "Or, to run the sandbox from the build on purpose: SANDBOX=1 npm run start:prod (npm start does the same without a build).",
  ].join("\n");
}

/** Null when `host:port` can be listened on (port 0 always can); else what to do about it. */
export async function portProblem(host: string, port: number): Promise<string | null> {
  if (port === 0) return null;
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", (err: NodeJS.ErrnoException) =>
      resolve(
        err.code === "EADDRINUSE"
          ? `Port ${port} on ${host} is in use (another SpendGate?). Stop it, or start on another port: PORT=${port + 1} npm start`
          : `Cannot listen on ${host}:${port} (${err.code ?? err.message}): set HOST and PORT.`,
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolve(null)));
  });
}
