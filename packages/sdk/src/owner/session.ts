/**
 * The owner's sign-in, kept between commands: ~/.spendgate/owner.json (mode 0600) holds the owner key `owner login`
 * received for one SpendGate. SPENDGATE_OWNER_API_KEY overrides it (a key from the dashboard, say).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { homedir } from "node:os";
import { SpendGateClient } from "../client";
import { SpendGateError } from "../errors";

export interface OwnerSession {
  baseUrl: string;
  ownerAddress: string;
  apiKey: string;
  expiresAt: string;
}

export function sessionPath(env: NodeJS.ProcessEnv): string {
  return join(env.HOME || homedir(), ".spendgate", "owner.json");
}

export function saveSession(env: NodeJS.ProcessEnv, s: OwnerSession): string {
  const path = sessionPath(env);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(s, null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, path);
  chmodSync(path, 0o600);
  return path;
}

function readSession(env: NodeJS.ProcessEnv): OwnerSession | null {
  const path = sessionPath(env);
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as OwnerSession;
  } catch {
    return null;
  }
}

/** A client of `baseUrl` with no key yet (public calls only). */
export const anonymousClient = (baseUrl: string) => new SpendGateClient({ baseUrl, apiKey: "-", timeoutMs: 120_000 });

/** A client with the owner key for `baseUrl`, or a SpendGateError (unauthorized) saying how to get one. */
export function ownerClient(baseUrl: string, env: NodeJS.ProcessEnv): SpendGateClient {
  const session = readSession(env);
  const key = env.SPENDGATE_OWNER_API_KEY ?? (session?.baseUrl === baseUrl ? session.apiKey : undefined);
  if (!key)
    throw new SpendGateError({
      error: "unauthorized",
      message: `Not signed in to ${baseUrl}: run \`spendgate owner login --api ${baseUrl}\` (or set SPENDGATE_OWNER_API_KEY).`,
      status: 401,
    });
  return new SpendGateClient({ baseUrl, apiKey: key, timeoutMs: 120_000 });
}
