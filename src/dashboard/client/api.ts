/** The page's side of the REST API: same origin, the owner key from the tab's session, errors as typed values. */

/** One network the service runs: what signing for its agents and adding it to a wallet need. */
export interface DashboardNetwork {
  name: string;
  chainId: number;
  chainIdHex: string;
  chainName: string;
  rpcUrl: string | null;
  explorerUrl: string;
  usdcAddress: string;
  nativeCurrency: { name: string; symbol: string; decimals: number };
  chainTime: number | null;
}

export interface DashboardConfig {
  mode: "embedded" | "production";
  /** Every network the service runs, the first (an agent's default) first; the chain fields below are the first's. */
  networks: DashboardNetwork[];
  chainId: number;
  chainIdHex: string;
  chainName: string;
  rpcUrl: string | null;
  explorerUrl: string;
  baseUrl: string;
  usdcAddress: string;
  signatureWindowSeconds: number;
  serverTime: number;
  /** The chain's latest block time (null: the chain did not answer); signatures are dated max(browser, chain). */
  chainTime: number | null;
}

export interface OwnerSession {
  apiKey: string;
  ownerAddress: string;
  expiresAt: string;
  /** EIP-6963 rdns (or "legacy") of the wallet used to sign in, to find it again on the next page. */
  wallet: string;
  walletName: string;
}

/** An answer of the API in its error shape { error, message, status }. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The owner key was refused (expired or revoked): the session is gone, the owner must sign in again. */
export class SessionExpiredError extends ApiError {
  constructor(message: string) {
    super(401, "unauthorized", message);
    this.name = "SessionExpiredError";
  }
}

/** The request did not reach the service or no answer came back. */
export class NetworkError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
  ) {
    super(`Could not reach SpendGate (${method} ${path}).`);
    this.name = "NetworkError";
  }
}

/** Needs a signed-in owner and there is none. */
export class SignInRequiredError extends Error {
  constructor() {
    super("Sign in with your wallet first.");
    this.name = "SignInRequiredError";
  }
}

const SESSION_KEY = "spendgate.owner";
const sessionListeners = new Set<(s: OwnerSession | null) => void>();

/** The owner key lives in sessionStorage only: it ends with the tab and is never written to localStorage. */
export function getSession(): OwnerSession | null {
  try {
    const raw = sessionStorage.getItem(SESSION_KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as OwnerSession;
    if (!s.apiKey || new Date(s.expiresAt).getTime() <= Date.now()) {
      sessionStorage.removeItem(SESSION_KEY);
      return null;
    }
    return s;
  } catch {
    return null;
  }
}

export function setSession(s: OwnerSession | null): void {
  if (s) sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
  else sessionStorage.removeItem(SESSION_KEY);
  for (const fn of sessionListeners) fn(s);
}

export function onSessionChange(fn: (s: OwnerSession | null) => void): void {
  sessionListeners.add(fn);
}

export interface RequestOptions {
  body?: unknown;
  /** Send the owner key (default true when signed in; "required" throws SignInRequiredError without a session). */
  auth?: boolean | "required";
  signal?: AbortSignal;
}

export async function api<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const session = opts.auth === false ? null : getSession();
  if (opts.auth === "required" && !session) throw new SignInRequiredError();
  if (session) headers.Authorization = `Bearer ${session.apiKey}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body, signal: opts.signal, credentials: "omit", cache: "no-store" });
  } catch (err) {
    if ((err as Error)?.name === "AbortError") throw err;
    throw new NetworkError(method, path);
  }
  const text = await res.text().catch(() => "");
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (res.ok) return parsed as T;
  const e = (parsed ?? {}) as { error?: string; message?: string; details?: unknown };
  const message = e.message ?? `The service answered HTTP ${res.status}.`;
  if (res.status === 401 && e.error === "unauthorized" && session) {
    setSession(null);
    throw new SessionExpiredError(message);
  }
  const retry = Number(res.headers.get("Retry-After"));
  throw new ApiError(
    res.status,
    e.error ?? `http_${res.status}`,
    message,
    e.details,
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}

let configPromise: Promise<DashboardConfig> | undefined;

export function loadConfig(): Promise<DashboardConfig> {
  configPromise ??= api<DashboardConfig>("GET", "/dashboard/config", { auth: false }).catch((err: unknown) => {
    configPromise = undefined;
    throw err;
  });
  return configPromise;
}

/**
 * The chain's time read again now (GET /dashboard/config, never cached): before a signature that must be newer than
 * the chain's last one (a resume after a pause), since a chain that mines on demand runs ahead of the wall clock.
 */
export async function freshChainTime(): Promise<number | null> {
  const c = await api<DashboardConfig>("GET", "/dashboard/config", { auth: false });
  return c.chainTime;
}
