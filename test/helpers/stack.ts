/**
 * The test stack: the real service (embedded chain, CongoDB, real HTTP on a random port) booted once per test
 * file, plus an owner wallet and small helpers to sign and call the API the way users do.
 */
import { Writable } from "node:stream";
import { Wallet, getAddress } from "ethers";
import pino from "pino";
import { loadConfig } from "../../src/config";
import { startService, type RunningService, type StartOptions } from "../../src/server";
import {
  LINK_AGENT_TYPES,
  NO_EXTRA_LIMITS,
  SET_POLICY_TYPES,
  SET_PAUSED_TYPES,
  type SignedPolicyFields,
  policyDomain,
  serviceDomain,
} from "../../src/chain/typedData";
import { type PolicyRequest, PolicyRequestError, buildSignedPolicy } from "../../src/policy/signedPolicy";

/** POST /limits fields (decimal strings for amounts, integers for counts and seconds). */
/** A POST /limits body's policy part (the builder's input type). */
export type PolicyInput = PolicyRequest & { allowlist: string[] };

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** The API helpers of a stack, for a service at any URL (a child process, say). */
export type RemoteStack = Omit<Stack, "svc" | "logs" | "close">;

export interface Stack {
  svc: RunningService;
  url: string;
  logs: string[];
  api<T = any>(
    method: string,
    path: string,
    opts?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  now(): number;
  /** Creates an agent with open genesis; returns its address and key. */
  genesis(body?: Record<string, unknown>): Promise<{ agentAddress: string; apiKey: string }>;
  signLink(owner: Wallet, agent: string, timestamp?: number): Promise<Record<string, unknown>>;
  /** The path of an agent's activation link (with its code) as genesis answered it. */
  activationPath(agent: string): string;
  /** A POST /limits body signed over the grown SetPolicy (the optional fields absent = 0). */
  policyBody(owner: Wallet, agent: string, policy: PolicyInput, timestamp?: number): Promise<Record<string, unknown>>;
  /** SetPaused: a resume signs the agent's current epoch (what it must name), a pause epoch 0 (it takes any). */
  signPause(
    owner: Wallet,
    agent: string,
    paused: boolean,
    timestamp?: number,
    epoch?: number,
  ): Promise<{ signature: string; timestamp: number; epoch: number }>;
  /** Genesis, link to `owner` and deploy a policy: a ready-to-pay agent. */
  onboard(owner: Wallet, policy?: Partial<PolicyInput>): Promise<{ agentAddress: string; apiKey: string; policyContract: string }>;
  close(): Promise<void>;
}

/**
 * The SetPolicy a POST /limits body asks the owner to sign (the shared builder); for a body the service must refuse
 * (a test of its 400), an empty policy: the service answers before it checks any signature.
 */
function signablePolicy(policy: PolicyRequest): SignedPolicyFields {
  try {
    return buildSignedPolicy(policy).policy;
  } catch (err) {
    if (!(err instanceof PolicyRequestError)) throw err;
    return { perTxLimit: 0n, dailyBudget: 0n, merchants: [], approvalThreshold: 0n, ...NO_EXTRA_LIMITS };
  }
}

export async function startStack(env: Record<string, string> = {}, opts: StartOptions = {}): Promise<Stack> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const logger = pino({ level: "info" }, sink);
  const config = loadConfig({ PORT: "0", ...env });
  const svc = await startService(config, { logger, ...opts });
  // What a resume must sign: the agent's current epoch, read from its contract (0 before deployment).
  const epochOf = async (agent: string) =>
    (await svc.chain.isDeployed(agent)) ? Number(await svc.chain.policyAt(agent, svc.chain.provider).epoch()) : 0;
  return { ...remoteStack(svc.url, config.chainId, epochOf), svc, logs, close: () => svc.close() };
}

/**
 * The same helpers against a service already running at `url` (signing for chain `chainId`); `epochOf` reads an agent's
 * authorisation epoch for signPause's resumes.
 */
export function remoteStack(
  url: string,
  chainId: number,
  epochOf: (agent: string) => Promise<number> = () => Promise.resolve(0),
): RemoteStack {
  const now = () => Math.floor(Date.now() / 1000);

  // Activation codes from genesis answers, so that signLink can send the one the owner would have in the link.
  const activationCodes = new Map<string, string>();
  const api: Stack["api"] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.key) headers.Authorization = `Bearer ${opts.key}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["Content-Type"] ??= "application/json";
    }
    const res = await fetch(url + path, { method, headers, body });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    if (path === "/wallet/genesis" && res.status === 201 && typeof parsed?.activationUrl === "string") {
      const code = new URL(parsed.activationUrl).searchParams.get("code") ?? "";
      if (parsed.activationCode !== code) throw new Error(`genesis: activationCode ${parsed.activationCode} is not the link's ${code}`);
      activationCodes.set(parsed.agentAddress, code);
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };

  // The agent wallet is its policy contract (one contract since v2): the policy domain's verifyingContract is the agent.
  const policyAddressOf = (agent: string) => getAddress(agent);

  const stack: RemoteStack = {
    url,
    api,
    now,
    async genesis(body = {}) {
      const res = await api("POST", "/wallet/genesis", { body });
      if (res.status !== 201) throw new Error(`genesis failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { agentAddress: res.body.agentAddress, apiKey: res.body.apiKey };
    },
    activationPath(agent) {
      const code = activationCodes.get(agent);
      return `/onboarding?agent=${agent}${code ? `&code=${code}` : ""}`;
    },
    async signLink(owner, agent, timestamp = now()) {
      const ownerSignature = await owner.signTypedData(serviceDomain(chainId), LINK_AGENT_TYPES, {
        agent,
        owner: owner.address,
        timestamp,
      });
      const activationCode = activationCodes.get(agent);
      return { agentAddress: agent, ownerAddress: owner.address, ownerSignature, timestamp, ...(activationCode ? { activationCode } : {}) };
    },
    async policyBody(owner, agent, policy, timestamp = now()) {
      const humanSignature = await owner.signTypedData(policyDomain(chainId, policyAddressOf(agent)), SET_POLICY_TYPES, {
        agent,
        ...signablePolicy(policy),
        timestamp,
      });
      return { agentAddress: agent, ...policy, humanSignature, timestamp };
    },
    async signPause(owner, agent, paused, timestamp = now(), given?: number) {
      // A pause takes effect whatever epoch it names (0, what a body without `epoch` means); a resume names the current.
      const epoch = given ?? (paused ? 0 : await epochOf(policyAddressOf(agent)));
      const signature = await owner.signTypedData(policyDomain(chainId, policyAddressOf(agent)), SET_PAUSED_TYPES, {
        agent,
        paused,
        epoch,
        timestamp,
      });
      return { signature, timestamp, epoch };
    },
    async onboard(owner, policy = {}) {
      const { agentAddress, apiKey } = await stack.genesis();
      const link = await api("POST", "/agents/link", { body: await stack.signLink(owner, agentAddress) });
      if (link.status !== 200) throw new Error(`link failed: ${link.status} ${JSON.stringify(link.body)}`);
      const full = { perTxLimit: "5", dailyBudget: "20", allowlist: ["127.0.0.1", "localhost"], approvalThreshold: "2", ...policy };
      const res = await api("POST", "/limits", { key: apiKey, body: await stack.policyBody(owner, agentAddress, full) });
      if (res.status !== 201) throw new Error(`limits failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { agentAddress, apiKey, policyContract: res.body.policyContract };
    },
  };
  return stack;
}

/** What a file closes after its tests: sellers, browsers, servers. */
export interface Closable {
  close(): Promise<void> | void;
}

export interface PerFileStack {
  /** The file's stack: stands for the one started in before() (reading it earlier throws). */
  s: Stack;
  /** Closes `x` (and `more`) after the file's tests, before the stack (in the order given); returns `x`. */
  keep: <T extends Closable>(x: T, ...more: Closable[]) => T;
}

/**
 * One stack for the enclosing describe: startStack(env, opts) in before(), and in after() whatever was kept, then the
 * stack. Call it inside describe(); `s` can be used as the stack from the tests and later hooks on.
 */
export function stackPerFile(env: Record<string, string> = {}, opts: StartOptions = {}): PerFileStack {
  let started: Stack | undefined;
  const kept: Closable[] = [];
  before(async () => {
    started = await startStack(env, opts);
  });
  after(async () => {
    for (const x of kept) await x.close();
    await started?.close();
  });
  return {
    s: startedInBefore(() => started, "stackPerFile: stack"),
    keep: (x, ...more) => {
      kept.push(x, ...more);
      return x;
    },
  };
}

/**
 * A value that stands for the one a before() hook starts (`get` returns it once started): reading a field earlier throws,
 * naming `what`. Lets a describe body hold `const x = …PerFile()` and its tests read `x.field`.
 */
export function startedInBefore<T extends object>(get: () => T | undefined, what: string): T {
  return new Proxy({} as T, {
    get(_target, key) {
      if (key === "then") return undefined; // not a promise
      const started = get();
      if (!started) throw new Error(`${what}.${String(key)} read before it started`);
      return Reflect.get(started, key) as unknown;
    },
  });
}

export function randomOwner(): Wallet {
  return Wallet.createRandom() as unknown as Wallet;
}
