/**
 * `spendgate onboard` (the bin of @spendgate/sdk; in the SpendGate repository `npx spendgate onboard` or `npm run
 * onboard --`): an agent's onboarding against a SpendGate, the steps of
 * /skill.md as one command. Reads ~/.spendgate/config.json; if it is there for this SpendGate, checks it with
 * GET /limits; otherwise calls POST /wallet/genesis, writes the config (mode 0600) and prints the owner's activation
 * link and the MCP client configuration. Never replaces another agent's config without --force (and then keeps a copy).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { SpendGateClient } from "./client";
import { SpendGateError } from "./errors";
import { mcpClientConfig } from "./mcp";
import type { AgentLimits, Genesis } from "./types";

export const DEFAULT_BASE_URL = "http://127.0.0.1:8402";

export interface AgentConfig {
  agentAddress: string;
  apiKey: string;
  label: string;
  createdAt: string;
  baseUrl?: string;
}

interface Options {
  baseUrl: string;
  email?: string;
  label?: string;
  token?: string;
  force: boolean;
  help: boolean;
}

export interface Io {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
}

const USAGE = `Usage: spendgate onboard [--base-url URL] [--email EMAIL] [--label LABEL] [--token KEY] [--force]

  --base-url  the SpendGate API (default $SPENDGATE_API, else ${DEFAULT_BASE_URL})
  --email     your owner's email (recommended)
  --label     a name for this agent (recommended)
  --token     Bearer token for genesis when registration is closed (an owner key or the registration token)
  --force     replace a config of another agent (the old file is kept as config.json.bak-<time>)

Writes ~/.spendgate/config.json (agentAddress, apiKey, label, createdAt, baseUrl) with mode 0600.`;

class UsageError extends Error {}

function parseArgs(argv: string[], env: NodeJS.ProcessEnv): Options {
  const o: Options = { baseUrl: env.SPENDGATE_API ?? DEFAULT_BASE_URL, force: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new UsageError(`${flag} needs a value`);
      return v;
    };
    if (flag === "--base-url") o.baseUrl = value();
    else if (flag === "--email") o.email = value();
    else if (flag === "--label") o.label = value();
    else if (flag === "--token") o.token = value();
    else if (flag === "--force") o.force = true;
    else if (flag === "--help" || flag === "-h") o.help = true;
    else throw new UsageError(`unknown option ${argv[i]}`);
  }
  let url: URL;
  try {
    url = new URL(o.baseUrl);
  } catch {
    throw new UsageError(`--base-url ${o.baseUrl} is not a URL`);
  }
  if (!/^https?:$/.test(url.protocol)) throw new UsageError("--base-url must be http or https");
  o.baseUrl = o.baseUrl.replace(/\/+$/, "");
  return o;
}

export function configPath(env: NodeJS.ProcessEnv): string {
  return join(env.HOME || homedir(), ".spendgate", "config.json");
}

/** "HTTP 409 conflict: <message>", as the service said it. */
const describe = (err: SpendGateError) => `HTTP ${err.status} ${err.error}: ${err.message}`;

/** The hint for a service that does not answer. */
const unreachable = (err: SpendGateError) => `${err.message}. Is it running (npm start)? Pass its URL with --base-url.`;

/** The MCP configuration, with the API key in it once (the Claude Code line names it, it does not print it again). */
function printMcp(io: Io, c: AgentConfig, baseUrl: string, path: string): void {
  io.out("MCP client configuration (HTTP transport; it holds the API key: keep it private):");
  io.out(JSON.stringify(mcpClientConfig(baseUrl, c.agentAddress, c.apiKey), null, 2));
  io.out(
    `Claude Code: claude mcp add --transport http spendgate ${baseUrl}/mcp --header "Authorization: Bearer <apiKey>" --header "X-Agent-Address: ${c.agentAddress}"`,
  );
  io.out(`(<apiKey> is the apiKey above and in ${path}.)`);
  io.out(
    "The tools are listed as soon as the server is registered (restart a client that loads its servers only at start); none is needed once the policy is active.",
  );
}

/** An existing config for this SpendGate: check it with GET /limits and print where the agent stands. */
async function check(io: Io, path: string, c: AgentConfig, baseUrl: string): Promise<number> {
  const client = new SpendGateClient({ baseUrl, apiKey: c.apiKey, agentAddress: c.agentAddress, timeoutMs: 30_000 });
  let p: AgentLimits;
  try {
    p = await client.limits();
  } catch (err) {
    if (!(err instanceof SpendGateError) || err.error === "network_error") throw err;
    io.err(`The config in ${path} (agent ${c.agentAddress}) is not accepted by ${baseUrl}: ${describe(err)}.`);
    io.err("It was left as it is. To create a new agent and replace it, run again with --force.");
    return 1;
  }
  io.out(`Already onboarded: agent ${c.agentAddress} (${c.label}), config ${path}.`);
  if (p.deployed) {
    io.out(
      `Spend policy active: perTxLimit ${p.perTxLimit}, dailyBudget ${p.dailyBudget} (remaining today ${p.remainingDailyBudget ?? "?"}), approvalThreshold ${p.approvalThreshold}, allowlist ${p.allowlist.join(", ") || "(empty)"}${p.paused ? ", PAUSED" : ""}.`,
    );
    // Owner-named payees (version 3 leaves): each pinned entry pays only that address; the others pay any address.
    const named = (p.payees ?? {}) as Record<string, string | undefined>;
    const payees = p.allowlist.map((e) => `${e} -> ${named[e] ?? "any address"}`);
    if (payees.length) io.out(`Payees: ${payees.join(", ")}.`);
    if (typeof p.minSwapRate === "string" && p.minSwapRate !== "0") io.out(`Swaps never sell WETH below ${p.minSwapRate} USDC per 1 WETH.`);
    io.out(`Policy deployed: its owner can now fund ${c.agentAddress} with USDC.`);
  } else {
    if (p.warning) io.out(`Warning: ${p.warning}`);
    io.out(`Do not fund ${c.agentAddress} yet: fund an agent only after its policy is deployed (its owner is fixed on-chain then).`);
    io.out("No spend policy yet: ask your owner to activate this agent with the activation link it was given at creation,");
    const link = await client.activation().then(
      (a) => a.activationUrl,
      () => "(GET /wallet/activation with your key returns it)",
    );
    io.out(`${link} (on the owner dashboard, by default served by the API itself).`);
  }
  printMcp(io, c, baseUrl, path);
  return 0;
}

function writeConfig(path: string, c: AgentConfig): void {
  mkdirSync(join(path, ".."), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(c, null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, path);
  chmodSync(path, 0o600);
}

export async function onboard(argv: string[], io: Io): Promise<number> {
  let o: Options;
  try {
    o = parseArgs(argv, io.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`spendgate onboard: ${err.message}\n\n${USAGE}`);
    return 64;
  }
  if (o.help) {
    io.out(USAGE);
    return 0;
  }
  const path = configPath(io.env);
  try {
    let existing: AgentConfig | null = null;
    if (existsSync(path)) {
      try {
        existing = JSON.parse(readFileSync(path, "utf8")) as AgentConfig;
      } catch {
        if (!o.force) {
          io.err(`${path} is not valid JSON. It was left as it is; fix or move it, or run again with --force.`);
          return 1;
        }
      }
    }
    if (existing && !o.force) {
      if (!existing.baseUrl || existing.baseUrl === o.baseUrl) return await check(io, path, existing, o.baseUrl);
      io.err(`${path} holds agent ${existing.agentAddress} of ${existing.baseUrl}, not of ${o.baseUrl}.`);
      io.err("It was left as it is. To create a new agent here and replace it, run again with --force.");
      return 1;
    }

    let g: Genesis;
    try {
      g = (await SpendGateClient.genesis(o.baseUrl, { email: o.email, label: o.label }, { token: o.token })).agent;
    } catch (err) {
      if (!(err instanceof SpendGateError) || err.error === "network_error") throw err;
      io.err(`Genesis failed at ${o.baseUrl}: ${describe(err)}`);
      if (err.status === 409) io.err("An agent with this email and label exists already: use its config, or choose another label.");
      if (err.status === 401) io.err("Registration is closed here: pass an owner key or the registration token with --token.");
      return 1;
    }
    const config: AgentConfig = {
      agentAddress: g.agentAddress,
      apiKey: g.apiKey,
      label: g.label,
      createdAt: g.createdAt,
      baseUrl: o.baseUrl,
    };
    if (existsSync(path)) {
      const backup = `${path}.bak-${new Date().toISOString().replace(/[:.]/g, "-")}`;
      renameSync(path, backup); // the old file holds the only copy of its key
      io.out(`Kept the previous config as ${backup}.`);
    }
    writeConfig(path, config);
    const link = g.activationUrl;
    io.out(`Agent wallet created: ${g.agentAddress} (${g.label}).`);
    io.out(`Config written to ${path} (mode 0600), with the API key: SpendGate never shows it again.`);
    io.out(`Ask your owner to activate this agent (link it and set its spend policy): ${link}`);
    io.out(
      `Fund ${g.agentAddress} only after its policy is deployed (GET /limits says "deployed": true): until then nothing on-chain says who owns it.`,
    );
    printMcp(io, config, o.baseUrl, path);
    io.out(
      `Then check: curl -s "${o.baseUrl}/limits?address=${g.agentAddress}" -H "Authorization: Bearer <apiKey>" ("deployed": true once active).`,
    );
    return 0;
  } catch (err) {
    if (err instanceof SpendGateError && err.error === "network_error") {
      io.err(unreachable(err));
      return 2;
    }
    throw err;
  }
}

export function main(argv: string[]): Promise<number> {
  return onboard(argv, { out: (l) => console.log(l), err: (l) => console.error(l), env: process.env });
}
