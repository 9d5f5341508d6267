/**
 * One declaration per operation: method and path, auth mode, one zod schema for `{ params, query, body }`, the
 * responses and error codes it can give, and the handler, which receives the parsed input typed from that schema.
 * The router (src/http/mount.ts), validation, /openapi.json and /references/api_docs.md are all read from these declarations.
 */
import type { Next } from "koa";
import type { z } from "zod";
import type { ErrorCode } from "../errors";
import type { FAUCET_TOKENS } from "../schemas/payments";
import type { Services } from "../services";
import type { NetworkServices } from "../services/networks";
import type { Principal } from "../principal";
import type { WebhookService } from "../webhooks/endpoints";
import type { AppContext } from "./types";

/** What the route enforces before its handler runs (registrar, x402 and mcp are checked by the handler itself). */
export type AuthMode = "none" | "agent" | "owner" | "either" | "registrar" | "x402" | "mcp" | "metrics";

export const AUTH_MODES: Record<AuthMode, string> = {
  none: "none",
  agent: "Bearer agent key; owner keys get 403",
  owner: "Bearer owner key (SIWE sign-in); agent keys get 403",
  either: "Bearer API key (the agent's key, or an owner key for its linked agents)",
  registrar: "none while registration is open (GENESIS_OPEN), else an owner key or the operator's REGISTRATION_TOKEN; agent keys get 403",
  x402: "x402 payment header (PAYMENT-SIGNATURE v2 or X-PAYMENT v1); the challenge is public",
  mcp: "Bearer API key plus X-Agent-Address (the agent the tools act for; optional with an agent key)",
  metrics: "Bearer METRICS_TOKEN when it is set; without it, clients on the loopback interface only (no forwarded requests)",
};

export type SignedType = "SetPolicy" | "SetPaused" | "ApprovalDecision" | "LinkAgent" | "SIWE" | "Withdraw" | "SetOwner";

export type AgentPrincipal = Extract<Principal, { role: "agent" }>;
export type OwnerPrincipal = Extract<Principal, { role: "owner" }>;

/** The principal a handler receives: the auth mode decides what it can be. */
export type PrincipalOf<A extends AuthMode> = A extends "agent"
  ? AgentPrincipal
  : A extends "owner"
    ? OwnerPrincipal
    : A extends "either"
      ? AgentPrincipal | OwnerPrincipal
      : Principal | undefined;

export interface ResponseDoc<S extends z.ZodType | undefined = z.ZodType | undefined> {
  description: string;
  schema?: S;
  /** Default application/json. */
  contentType?: string;
  headers?: Record<string, string>;
}
export type Responses = Record<number, ResponseDoc>;

export interface HeaderDoc {
  name: string;
  required: boolean;
  description: string;
}

/** The one input schema: `z.object({ params?, query?, body? })`, each part a zod schema. */
export type InputSchema = z.ZodObject;

type BodyOf<D> = D extends { schema: infer S extends z.ZodType } ? z.input<S> : unknown;
/** An answer the operation documents: one of its statuses, with that status's body. */
export type ReplyOf<R extends Responses> = {
  [K in keyof R & number]: { status: K; body: BodyOf<R[K]>; headers?: Record<string, string> };
}[keyof R & number];

/** The embedded dev faucet: gives `units` of `token` to `to`; answers the delivering transaction's hash. */
export type Faucet = (to: string, token: keyof typeof FAUCET_TOKENS, units: bigint) => Promise<string>;

/** The x402 schemes the sandbox's demo sellers sell beyond exact. */
export type DemoScheme = "upto" | "batch-settlement";

/** A request to a demo seller as the x402 HTTP server reads it, and its answer. */
export interface DemoSellerRequest {
  method: string;
  url: URL;
  header: (name: string) => string | undefined;
}
export interface DemoSellerAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * The sandbox's demo sellers of `scheme` at `price` (USDC base units: upto's ceiling, batch-settlement's price per
 * request); `charge` is what an upto payment settles. In embedded mode only (src/dev/schemeSellers.ts).
 */
export interface DemoSellers {
  handle(scheme: DemoScheme, price: bigint, req: DemoSellerRequest, charge?: bigint): Promise<DemoSellerAnswer>;
}

/**
 * What every handler can reach: the services (the first network's, and every network's: an agent's request goes to
 * its network's), the webhook service, and the whole operation list (the docs need it).
 */
export interface OperationDeps {
  /** The first network's services: what a request naming no agent uses (store reads, sign-in, system routes). */
  s: Services;
  /** Every network's services; `networks.authorize(principal, address)` gives an agent with its network's. */
  networks: NetworkServices;
  webhooks: WebhookService;
  operations: readonly AnyOperation[];
  /** In embedded mode only: the sandbox's faucet of each network (src/dev/, handed over by src/server.ts). */
  faucets?: ReadonlyMap<string, Faucet>;
  /** In embedded mode only: the first network's demo sellers of upto and batch-settlement (src/dev/). */
  demoSellers?: DemoSellers;
}

export interface OperationRequest<A extends AuthMode, I extends InputSchema> {
  input: z.output<I>;
  principal: PrincipalOf<A>;
  ctx: AppContext;
  deps: OperationDeps;
}

interface OperationBase<A extends AuthMode, I extends InputSchema, R extends Responses> {
  method: "GET" | "POST" | "DELETE";
  /** Koa style: /approvals/:id/approve */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  auth: A;
  signature?: SignedType;
  input: I;
  /** A malformed path parameter answers 404 with this message (a missing and a malformed id look the same). */
  notFound?: (params: Record<string, string>) => string;
  headers?: HeaderDoc[];
  /** Documents a body the handler reads itself (MCP's JSON-RPC); never read or validated by the framework. */
  ownBody?: z.ZodType;
  responses: R;
  /**
   * Error codes (ERROR_CODES) this route can answer, beyond rate_limited, internal and unavailable (the store or the
   * chain down), which every route can.
   */
  errors: readonly ErrorCode[];
  /** Answers without the store or the chain: never 503 `unavailable` (GET /health/live). */
  noDependencies?: boolean;
  /** Mounted but not documented: a dashboard page whose path and method an API operation documents. */
  hidden?: boolean;
}

/** An operation answering one of its documented replies. */
export interface JsonOperation<A extends AuthMode, I extends InputSchema, R extends Responses> extends OperationBase<A, I, R> {
  handle(req: OperationRequest<A, I>): Promise<NoInfer<ReplyOf<R>>>;
}

/** An operation that writes the answer itself (pages, markdown, the x402 seller, the MCP transport). */
export interface RawOperation<A extends AuthMode, I extends InputSchema, R extends Responses> extends OperationBase<A, I, R> {
  serve(req: OperationRequest<A, I>, next: Next): Promise<void>;
}

export type Operation<A extends AuthMode, I extends InputSchema, R extends Responses> = JsonOperation<A, I, R> | RawOperation<A, I, R>;
export type AnyOperation = Operation<AuthMode, InputSchema, Responses>;

/** Declares an operation; the generic parameters give the handler its typed input, principal and replies. */
export function operation<const A extends AuthMode, I extends InputSchema, const R extends Responses>(
  op: JsonOperation<A, I, R>,
): AnyOperation {
  // The handler's reply type is tied to R, which a list of operations of every R cannot name.
  return op as unknown as AnyOperation;
}

/** Declares an operation that writes its own answer. */
export function rawOperation<const A extends AuthMode, I extends InputSchema, const R extends Responses>(
  op: RawOperation<A, I, R>,
): AnyOperation {
  return op;
}

export const json = <S extends z.ZodType>(description: string, schema: S, headers?: Record<string, string>) => ({
  description,
  schema,
  headers,
});
export const markdown = (description: string): ResponseDoc => ({ description, contentType: "text/markdown; charset=utf-8" });
export const html = (description: string): ResponseDoc => ({ description, contentType: "text/html; charset=utf-8" });

/** Every route that checks an owner's signature can answer this. */
export const SIGNED = ["invalid_signature"] as const;
/** What a call to a seller can fail with (POST /pay, approve). */
export const SELLER_ERRORS = [
  "upstream_error",
  "invalid_payment_required",
  "seller_redirect_refused",
  "seller_response_too_large",
  "upstream_timeout",
  "unsafe_seller_address",
  "insecure_seller",
] as const;

/** The Koa path in OpenAPI form: /approvals/:id/approve -> /approvals/{id}/approve. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, "{$1}");

/** An answer: the status stays a literal, so it is checked against the operation's documented responses. */
export const reply = <const S extends number, B>(status: S, body: B, headers?: Record<string, string>) => ({ status, body, headers });
