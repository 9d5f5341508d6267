/**
 * A typed client of one SpendGate service for an agent (its API key) or an owner (an owner key): pay, limits,
 * ledger, approvals. Expected payment outcomes (approved, pending, blocked) are returned; every other answer is thrown
 * as a SpendGateError carrying the service's `{ error, message, status }`. No dependencies: Node's own fetch.
 */
import { SpendGateError, invalidInput as invalid } from "./errors";
import type { AgentLimits, Approval, ApprovalDecision, Genesis, LedgerPage, LedgerQuery, PayOptions, PayRequest, PayResult } from "./types";

export interface SpendGateClientOptions {
  /** The service, such as https://pay.example.com (no trailing slash needed). */
  baseUrl: string;
  /** Bearer key: the agent's API key (or an owner key for owner calls). */
  apiKey: string;
  /** The agent this client acts for: the default of pay, limits and ledger. */
  agentAddress?: string;
  /** Per request; default 60 s (a payment waits for the chain and the seller). */
  timeoutMs?: number;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

type Query = Record<string, string | number | undefined>;

interface Call {
  method?: "GET" | "POST";
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Statuses answered as results rather than thrown. Default: 2xx. */
  accept?: readonly number[];
  /** Send no Authorization header. */
  anonymous?: boolean;
}

export class SpendGateClient {
  readonly baseUrl: string;
  readonly agentAddress: string | undefined;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(opts: SpendGateClientOptions) {
    let url: URL;
    try {
      url = new URL(opts.baseUrl);
    } catch {
      throw invalid(`baseUrl ${opts.baseUrl} is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw invalid("baseUrl must be http or https");
    if (!opts.apiKey) throw invalid("apiKey is required");
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.apiKey = opts.apiKey;
    this.agentAddress = opts.agentAddress;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.fetchImpl = opts.fetch ?? fetch;
  }

  /** POST /wallet/genesis: a new agent wallet and its API key (shown once). `token`: an owner key or registration token when genesis is closed. */
  static async genesis(
    baseUrl: string,
    body: { email?: string; label?: string } = {},
    opts: { token?: string; fetch?: typeof fetch } = {},
  ): Promise<{ agent: Genesis; client: SpendGateClient }> {
    const anonymous = new SpendGateClient({ baseUrl, apiKey: opts.token ?? "-", fetch: opts.fetch });
    const agent = await anonymous.request<Genesis>("/wallet/genesis", { method: "POST", body, anonymous: !opts.token });
    return { agent, client: new SpendGateClient({ baseUrl, apiKey: agent.apiKey, agentAddress: agent.agentAddress, fetch: opts.fetch }) };
  }

  /**
   * POST /pay. Resolves with approved (200), pending (202: the owner decides) or blocked (422: never retry it). The
   * agent: `req.agentAddress`, else the client's, else the one the agent key names.
   */
  async pay(req: PayRequest, opts: PayOptions = {}): Promise<PayResult> {
    for (const field of ["serviceUrl", "maxAmount", "intent"] as const)
      if (typeof req[field] !== "string" || !req[field]) throw invalid(`pay: ${field} is required`);
    const agentAddress = req.agentAddress ?? this.agentAddress;
    const body = agentAddress ? { ...req, agentAddress } : req;
    const headers = opts.idempotencyKey ? { "Idempotency-Key": opts.idempotencyKey } : undefined;
    return this.request<PayResult>("/pay", { method: "POST", body, headers, signal: opts.signal, accept: [200, 202, 422] });
  }

  /** GET /limits: the policy of one agent (default: this client's). */
  async limits(address?: string): Promise<AgentLimits> {
    const agent = address ?? this.requireAgent("limits");
    const res = await this.request<{ agents: AgentLimits[] }>("/limits", { query: { address: agent } });
    const found = res.agents.find((a) => a.address.toLowerCase() === agent.toLowerCase());
    if (!found) throw new SpendGateError({ error: "not_found", message: `GET /limits answered no policy for ${agent}`, status: 404 });
    return found;
  }

  /** GET /limits without an address: every agent the key reaches (an owner key: all of the owner's). */
  async allLimits(): Promise<AgentLimits[]> {
    return (await this.request<{ agents: AgentLimits[] }>("/limits")).agents;
  }

  /** GET /ledger: one page of payments, newest first (default: this client's agent, 50 a page). */
  async ledger(query: LedgerQuery = {}): Promise<LedgerPage> {
    const { address = this.agentAddress, ...rest } = query;
    return this.request<LedgerPage>("/ledger", { query: { address, ...rest } });
  }

  /** GET /approvals: payments waiting for the owner (owner keys; optional agent filter). */
  async approvals(address?: string): Promise<Approval[]> {
    return (await this.request<{ approvals: Approval[] }>("/approvals", { query: { address } })).approvals;
  }

  /** POST /approvals/:id/approve with the owner's signed decision: the payment settles. */
  async approve(approvalId: string, decision: ApprovalDecision): Promise<Record<string, unknown> & { id: string; status: "approved" }> {
    requireDecision("approve", approvalId, decision);
    return this.request(`/approvals/${encodeURIComponent(approvalId)}/approve`, { method: "POST", body: decision });
  }

  /** POST /approvals/:id/deny with the owner's signed decision. */
  async deny(approvalId: string, decision: ApprovalDecision): Promise<Record<string, unknown> & { id: string; status: "denied" }> {
    requireDecision("deny", approvalId, decision);
    return this.request(`/approvals/${encodeURIComponent(approvalId)}/deny`, { method: "POST", body: decision });
  }

  /** GET /wallet/balance of an agent (default: this client's). */
  async balance(address?: string): Promise<Record<string, unknown>> {
    return this.request("/wallet/balance", { query: { address: address ?? this.requireAgent("balance") } });
  }

  /** GET /wallet/activation: the owner's activation link and code again (agent key, or its owner's). */
  async activation(address?: string): Promise<{ activationUrl: string; activationCode: string } & Record<string, unknown>> {
    return this.request("/wallet/activation", { query: { address: address ?? this.requireAgent("activation") } });
  }

  /** Any other endpoint of the API, with the same authentication and errors. */
  async request<T>(path: string, call: Call = {}): Promise<T> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { Accept: "application/json", ...call.headers };
    if (!call.anonymous) headers.Authorization = `Bearer ${this.apiKey}`;
    if (call.body !== undefined) headers["Content-Type"] = "application/json";
    const signal = call.signal ? AbortSignal.any([call.signal, AbortSignal.timeout(this.timeoutMs)]) : AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await this.fetchImpl(url, {
        method: call.method ?? "GET",
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        signal,
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
      throw new SpendGateError({
        error: "network_error",
        message: `Cannot reach SpendGate at ${this.baseUrl} (${why})`,
        status: 0,
        retryable: true,
      });
    }
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: kept as text for the error below
    }
    const accepted = call.accept ? call.accept.includes(res.status) : res.ok;
    if (accepted && body !== null && typeof body === "object") return body as T;
    throw errorOf(res, body);
  }

  private requireAgent(what: string): string {
    if (!this.agentAddress) throw invalid(`${what}: pass an agent address, or agentAddress to the client`);
    return this.agentAddress;
  }
}

function requireDecision(action: string, approvalId: string, decision: ApprovalDecision | undefined): void {
  if (!approvalId) throw invalid(`${action}: the approval id is required`);
  if (!decision?.humanSignature || !Number.isInteger(decision.timestamp))
    throw invalid(`${action}: the owner's humanSignature and its timestamp are required`);
}

function errorOf(res: Response, body: unknown): SpendGateError {
  const retryAfterHeader = res.headers.get("retry-after");
  const retryAfter = retryAfterHeader && /^\d+$/.test(retryAfterHeader) ? Number(retryAfterHeader) : undefined;
  if (body !== null && typeof body === "object" && typeof (body as { error?: unknown }).error === "string") {
    const b = body as Record<string, unknown>;
    return new SpendGateError({
      error: b.error as string,
      message: typeof b.message === "string" ? b.message : `HTTP ${res.status}`,
      status: typeof b.status === "number" ? b.status : res.status,
      retryable: b.retryable === true,
      retryAfter,
      body: b,
    });
  }
  const snippet = typeof body === "string" ? body.slice(0, 200) : "";
  return new SpendGateError({
    error: "unexpected_response",
    message: `HTTP ${res.status} from ${res.url}${snippet ? `: ${snippet}` : ""}`,
    status: res.status,
    retryAfter,
  });
}
