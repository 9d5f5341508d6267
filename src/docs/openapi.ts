/** The OpenAPI 3.1 document, generated from the route registry and the shared zod schemas. */
import { ErrorBody } from "../schemas/common";
import { ERROR_CODES } from "./errors";
import { SchemaSet, type JsonSchema } from "./jsonSchema";
import { ROUTES, openApiPath, AUTH_MODES, type RouteDoc } from "./registry";

export interface DocsContext {
  baseUrl: string;
  dashboardUrl: string;
  version: string;
}

/** Error codes a route can answer, grouped by HTTP status. */
export function errorsByStatus(route: RouteDoc): Map<number, string[]> {
  const codes = [...route.errors, "rate_limited", "internal"];
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const doc = ERROR_CODES[code];
    if (!doc) throw new Error(`${route.method} ${route.path}: unknown error code ${code}`);
    byStatus.set(doc.status, [...(byStatus.get(doc.status) ?? []), code]);
  }
  return byStatus;
}

const SECURITY: Record<string, Record<string, string[]>[]> = {
  none: [],
  key: [{ apiKey: [] }],
  owner: [{ apiKey: [] }],
  genesis: [{}, { apiKey: [] }],
  x402: [{}, { x402: [] }],
  mcp: [{ apiKey: [], agentAddress: [] }],
};

export function operationId(route: RouteDoc): string {
  const words = route.path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1));
  return route.method.toLowerCase() + words.join("");
}

function parameters(route: RouteDoc, set: SchemaSet): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const [name, p] of Object.entries(route.params ?? {})) {
    out.push({ name, in: "path", required: true, description: p.description, schema: set.convert(p.schema, "input") });
  }
  if (route.query) {
    const q = set.convert(route.query, "input");
    const required = new Set<string>(q.required ?? []);
    for (const [name, schema] of Object.entries<JsonSchema>(q.properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({ name, in: "query", required: required.has(name), ...(description ? { description } : {}), schema: rest });
    }
  }
  for (const h of route.headers ?? []) {
    out.push({ name: h.name, in: "header", required: h.required, description: h.description, schema: { type: "string" } });
  }
  return out;
}

function operation(route: RouteDoc, set: SchemaSet, errorRef: JsonSchema): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const res: JsonSchema = { description: r.description };
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
      existing.description = `${String(existing.description)}; errors: ${text}`;
      if (content) content.schema = { oneOf: [content.schema, errorRef] };
    } else {
      const headers =
        status === 429
          ? { "Retry-After": { description: "seconds to wait", schema: { type: "integer" } } }
          : status === 405
            ? { Allow: { description: "allowed methods", schema: { type: "string" } } }
            : undefined;
      responses[status] = { description: text, content: { "application/json": { schema: errorRef } }, ...(headers ? { headers } : {}) };
    }
  }
  const op: JsonSchema = {
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
  if (route.body) op.requestBody = { required: true, content: { "application/json": { schema: set.convert(route.body, "input") } } };
  return op;
}

export function buildOpenApi(ctx: DocsContext): JsonSchema {
  const set = new SchemaSet();
  const errorRef = set.convert(ErrorBody, "output");
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of ROUTES) {
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
        "Control plane for AI agents that pay: on-chain spend policies, x402 payments in USDC on Base (chain id 8453), " +
        `approvals and a ledger. Errors: { error, message, status }. Markdown reference: ${ctx.baseUrl}/references/api_docs.md`,
    },
    servers: [{ url: ctx.baseUrl }],
    tags: [...new Set(ROUTES.map((r) => r.tag))].map((name) => ({ name })),
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
        agentAddress: { type: "apiKey", in: "header", name: "X-Agent-Address", description: "MCP: the agent the tools act for" },
        x402: { type: "apiKey", in: "header", name: "PAYMENT-SIGNATURE", description: "x402 v2 payment (X-PAYMENT for v1)" },
      },
    },
  };
}
