/** The OpenAPI 3.1 document, generated from the operation declarations and the shared zod schemas. */
import type { z } from "zod";
import { AUTH_MODES, type AnyOperation, type AuthMode, openApiPath } from "../api/operation";
import { ErrorBody } from "../schemas/common";
import type { ErrorCode } from "../errors";
import { ERROR_CODES } from "./errors";
import { SchemaSet, type JsonSchema } from "./jsonSchema";

type RouteDoc = AnyOperation;

/** The OpenAPI 3.1 objects this generator writes (and the markdown generator reads back). */
export interface MediaType {
  schema: JsonSchema;
}

export interface OpenApiParameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface OpenApiHeader {
  description: string;
  schema: JsonSchema;
}

export interface OpenApiResponse {
  description: string;
  content?: Record<string, MediaType>;
  headers?: Record<string, OpenApiHeader>;
}

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  security: Record<string, string[]>[];
  "x-error-codes": ErrorCode[];
  responses: Record<string, OpenApiResponse>;
  parameters?: OpenApiParameter[];
  requestBody?: { required: boolean; content: Record<string, MediaType> };
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  tags: { name: string }[];
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, Record<string, string>> };
}

/** The documented operations, in declaration order (pages an API operation shares a path with are left out). */
export const documented = (ops: readonly AnyOperation[]) => ops.filter((op) => !op.hidden);

/** One part of an operation's input schema. */
export const inputPart = (op: AnyOperation, name: "params" | "query" | "body") => op.input.shape[name] as z.ZodType | undefined;

export interface DocsContext {
  baseUrl: string;
  dashboardUrl: string;
  version: string;
  /** The networks the deployment runs, the first (an agent's default) first. */
  networks: readonly { name: string; displayName: string; chainId: number }[];
}

/** "Base (chain id 8453)", or "Base (chain id 8453) or Base Sepolia (chain id 84532)": where the deployment pays. */
export function onNetworks(ctx: Pick<DocsContext, "networks">): string {
  return ctx.networks.map((n) => `${n.displayName} (chain id ${n.chainId})`).join(" or ");
}

/** Error codes a route can answer, grouped by HTTP status. */
export function errorsByStatus(route: RouteDoc): Map<number, ErrorCode[]> {
  // Every route can be rate limited and fail unexpectedly; every route that reads the store or the chain can find it down.
  const everyRoute: ErrorCode[] = route.noDependencies ? ["rate_limited", "internal"] : ["rate_limited", "unavailable", "internal"];
  const codes: ErrorCode[] = [...new Set([...route.errors, ...everyRoute])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const doc = ERROR_CODES[code];
    byStatus.set(doc.status, [...(byStatus.get(doc.status) ?? []), code]);
  }
  return byStatus;
}

const SECURITY: Record<AuthMode, Record<string, string[]>[]> = {
  none: [],
  agent: [{ apiKey: [] }],
  either: [{ apiKey: [] }],
  owner: [{ apiKey: [] }],
  registrar: [{}, { apiKey: [] }],
  x402: [{}, { x402: [] }],
  mcp: [{ apiKey: [], agentAddress: [] }, { apiKey: [] }],
  metrics: [{}, { metricsToken: [] }],
};

export function operationId(route: RouteDoc): string {
  const words = route.path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1));
  return route.method.toLowerCase() + words.join("");
}

function parameters(route: RouteDoc, set: SchemaSet): OpenApiParameter[] {
  const out: OpenApiParameter[] = [];
  const params = inputPart(route, "params");
  const query = inputPart(route, "query");
  if (params) {
    for (const [name, schema] of Object.entries(set.convert(params, "input").properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({ name, in: "path", required: true, description, schema: rest });
    }
  }
  if (query) {
    const q = set.convert(query, "input");
    const required = new Set<string>(q.required ?? []);
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({ name, in: "query", required: required.has(name), ...(description ? { description } : {}), schema: rest });
    }
  }
  for (const h of route.headers ?? []) {
    out.push({ name: h.name, in: "header", required: h.required, description: h.description, schema: { type: "string" } });
  }
  return out;
}

function operation(route: RouteDoc, set: SchemaSet, errorRef: JsonSchema): OpenApiOperation {
  const responses: Record<string, OpenApiResponse> = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const res: OpenApiResponse = { description: r.description };
    if (r.schema) res.content = { [r.contentType ?? "application/json"]: { schema: set.convert(r.schema, "output") } };
    else if (r.contentType) res.content = { [r.contentType]: { schema: { type: "string" } } };
    if (r.headers)
      res.headers = Object.fromEntries(Object.entries(r.headers).map(([h, d]) => [h, { description: d, schema: { type: "string" } }]));
    responses[status] = res;
  }
  for (const [status, codes] of errorsByStatus(route)) {
    const text = codes.map((c) => `\`${c}\`: ${ERROR_CODES[c].meaning}`).join(" ");
    const existing = responses[status];
    if (existing) {
      // e.g. 422 on POST /pay: a blocked payment result, or an error body
      const content = existing.content?.["application/json"];
      existing.description = `${existing.description}; errors: ${text}`;
      if (content) content.schema = { oneOf: [content.schema, errorRef] };
    } else {
      const headers: Record<string, OpenApiHeader> | undefined =
        status === 429 || status === 503
          ? { "Retry-After": { description: "seconds to wait", schema: { type: "integer" } } }
          : status === 405
            ? { Allow: { description: "allowed methods", schema: { type: "string" } } }
            : undefined;
      responses[status] = { description: text, content: { "application/json": { schema: errorRef } }, ...(headers ? { headers } : {}) };
    }
  }
  const op: OpenApiOperation = {
    operationId: operationId(route),
    tags: [route.tag],
    summary: route.summary,
    description: [route.description, `Auth: ${AUTH_MODES[route.auth]}.`, route.signature ? `Signed by the owner: ${route.signature}.` : ""]
      .filter(Boolean)
      .join(" "),
    security: SECURITY[route.auth],
    "x-error-codes": [...errorsByStatus(route).values()].flat(),
    responses,
  };
  const params = parameters(route, set);
  if (params.length) op.parameters = params;
  const body = inputPart(route, "body") ?? route.ownBody;
  if (body) op.requestBody = { required: true, content: { "application/json": { schema: set.convert(body, "input") } } };
  return op;
}

export function buildOpenApi(ctx: DocsContext, operations: readonly AnyOperation[]): OpenApiDocument {
  const routes = documented(operations);
  const set = new SchemaSet();
  const errorRef = set.convert(ErrorBody, "output");
  const paths: Record<string, Record<string, OpenApiOperation>> = {};
  for (const route of routes) {
    const p = openApiPath(route.path);
    paths[p] ??= {};
    paths[p][route.method.toLowerCase()] = operation(route, set, errorRef);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "SpendGate API",
      version: ctx.version,
      description:
        `Control plane for AI agents that pay: on-chain spend policies, x402 payments in USDC on ${onNetworks(ctx)}, ` +
        `approvals and a ledger. Errors: { error, message, status }. Markdown reference: ${ctx.baseUrl}/references/api_docs.md`,
    },
    servers: [{ url: ctx.baseUrl }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: set.components,
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "sk_<64 hex>",
          description: "agent key (POST /wallet/genesis) or owner key (SIWE sign-in)",
        },
        agentAddress: {
          type: "apiKey",
          in: "header",
          name: "X-Agent-Address",
          description: "MCP: the agent the tools act for (optional with an agent key)",
        },
        x402: { type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE", description: "x402 v2 payment (X-PAYMENT for v1)" },
        metricsToken: { type: "http", scheme: "bearer", description: "METRICS_TOKEN (GET /metrics, an operator route)" },
      },
    },
  };
}
