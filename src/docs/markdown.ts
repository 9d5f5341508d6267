/** The API reference in markdown (GET /references/api_docs.md), generated from the same operation declarations as OpenAPI. */
import { TypedDataEncoder } from "ethers";
import {
  APPROVAL_DECISION_TYPES,
  DOMAIN_NAME,
  DOMAIN_VERSION,
  LINK_AGENT_TYPES,
  SET_OPERATOR_TYPES,
  SET_OWNER_TYPES,
  WITHDRAW_TYPES,
  SET_PAUSED_TYPES,
  SET_POLICY_TYPES,
} from "../chain/typedData";
import { TOOLS } from "../mcp/tools";
import { BLOCK_REASONS, ERROR_CODES, LEDGER_STATUSES } from "./errors";
import { SchemaSet, refName, type JsonSchema } from "./jsonSchema";
import { AUTH_MODES, type AnyOperation, openApiPath } from "../api/operation";
import { buildOpenApi, documented, errorsByStatus, onNetworks, type DocsContext, type OpenApiOperation } from "./openapi";

const SAFE_INT = 9007199254740991;
const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

function typeLabel(js: JsonSchema): string {
  const name = refName(js);
  if (name) return `[${name}](#${name.toLowerCase()})`;
  const alternatives = js.anyOf ?? js.oneOf;
  if (alternatives) return alternatives.map(typeLabel).join(" or ");
  if (js.const !== undefined) return JSON.stringify(js.const);
  if (js.enum) return js.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (Array.isArray(js.type)) return js.type.join(" or ");
  if (js.type === "array") return `array of ${js.items ? typeLabel(js.items) : "any"}`;
  if (js.type === "object" && !js.properties && js.additionalProperties) return "object (map)";
  return js.type ?? "any (JSON)";
}

function constraints(js: JsonSchema): string {
  const c: string[] = [];
  if (js.format) c.push(`format ${js.format}`);
  if (js.pattern) c.push(`pattern \`${js.pattern}\``);
  if (js.minLength !== undefined) c.push(`min length ${js.minLength}`);
  if (js.maxLength !== undefined) c.push(`max length ${js.maxLength}`);
  if (js.minimum !== undefined && Math.abs(js.minimum) !== SAFE_INT) c.push(`≥ ${js.minimum}`);
  if (js.maximum !== undefined && Math.abs(js.maximum) !== SAFE_INT) c.push(`≤ ${js.maximum}`);
  if (js.maxItems !== undefined) c.push(`at most ${js.maxItems} items`);
  if (js.default !== undefined) c.push(`default ${JSON.stringify(js.default)}`);
  if (js.example !== undefined) c.push(`e.g. \`${JSON.stringify(js.example)}\``);
  return c.join("; ");
}

interface Row {
  name: string;
  type: string;
  required: boolean;
  notes: string;
}

/** One row per field; inline objects and arrays of inline objects are flattened (a.b, a[].b). */
function fieldRows(js: JsonSchema, set: SchemaSet, prefix = ""): Row[] {
  const obj = set.resolve(js);
  const required = new Set(obj.required ?? []);
  const rows: Row[] = [];
  for (const [name, raw] of Object.entries(obj.properties ?? {})) {
    const full = prefix + name;
    const notes = [raw.description, constraints(raw)].filter(Boolean).join("; ");
    rows.push({ name: full, type: typeLabel(raw), required: required.has(name), notes });
    if (raw.type === "object" && raw.properties) rows.push(...fieldRows(raw, set, `${full}.`));
    if (raw.type === "array" && raw.items?.type === "object" && raw.items.properties) rows.push(...fieldRows(raw.items, set, `${full}[].`));
    for (const alt of raw.anyOf ?? []) if (alt.type === "object" && alt.properties) rows.push(...fieldRows(alt, set, `${full}.`));
  }
  return rows;
}

function rowsTable(rows: Row[]): string {
  if (!rows.length) return "(no fields)\n";
  const lines = ["| field | type | required | notes |", "|---|---|---|---|"];
  for (const r of rows) lines.push(`| \`${r.name}\` | ${cell(r.type)} | ${r.required ? "yes" : "no"} | ${cell(r.notes)} |`);
  return lines.join("\n") + "\n";
}

function routeSection(route: AnyOperation, op: OpenApiOperation, set: SchemaSet): string {
  const out: string[] = [`### \`${route.method} ${route.path}\``, "", route.summary + ".", ""];
  if (route.description) out.push(route.description, "");
  out.push(`- Auth: ${AUTH_MODES[route.auth]}.`);
  if (route.signature) out.push(`- Signed by the owner: \`${route.signature}\` (see [EIP-712 signing](#eip-712-signing)).`);
  out.push("");
  const params = op.parameters ?? [];
  for (const where of ["path", "query", "header"]) {
    const list = params.filter((p) => p.in === where);
    if (!list.length) continue;
    out.push(`${where === "path" ? "Path parameters" : where === "query" ? "Query parameters" : "Headers"}:`, "");
    out.push("| name | type | required | notes |", "|---|---|---|---|");
    for (const p of list) {
      const notes = [p.description, constraints(p.schema)].filter(Boolean).join("; ");
      out.push(`| \`${p.name}\` | ${cell(typeLabel(p.schema))} | ${p.required ? "yes" : "no"} | ${cell(notes)} |`);
    }
    out.push("");
  }
  const body = op.requestBody?.content["application/json"]?.schema;
  if (body) {
    const name = refName(body);
    out.push(`Request body (JSON${name ? `, [${name}](#${name.toLowerCase()})` : ""}):`, "", rowsTable(fieldRows(body, set)));
  }
  out.push("Responses:", "", "| status | body | meaning |", "|---|---|---|");
  for (const [status, r] of Object.entries(route.responses)) {
    const schema = op.responses[status]?.content?.[r.contentType ?? "application/json"]?.schema;
    const shown = schema?.oneOf ? schema.oneOf[0] : schema;
    const body = shown ? typeLabel(shown) : (r.contentType ?? "(none)");
    const headers = r.headers
      ? ` Headers: ${Object.keys(r.headers)
          .map((h) => `\`${h}\``)
          .join(", ")}.`
      : "";
    out.push(`| ${status} | ${cell(body)} | ${cell(r.description + "." + headers)} |`);
  }
  for (const [status, codes] of [...errorsByStatus(route)].sort(([a], [b]) => a - b)) {
    out.push(`| ${status} | [Error](#error) | ${codes.map((c) => `\`${c}\``).join(", ")} |`);
  }
  out.push("");
  return out.join("\n");
}

/** The EIP-712 type string of the first (primary) type, structs it uses appended, as wallets and contracts hash it. */
function typesBlock(name: string, types: Record<string, { name: string; type: string }[]>): string {
  const [primary] = Object.keys(types);
  return TypedDataEncoder.from(types).encodeType(primary) + (name ? `   ${name}` : "");
}

function signingSection(ctx: DocsContext): string {
  const chainId = ctx.networks[0].chainId;
  return [
    "## EIP-712 signing",
    "",
    "Owners sign with their own wallet; the agent's contract verifies, and the service asks the chain (OpenZeppelin",
    "SignatureChecker: EOAs, ERC-1271 wallets such as a Safe, EIP-7702 accounts) before relaying. Timestamps are Unix seconds",
    "within ±300 s of the server clock; every signature is single use. Amounts are USDC base units (6 decimals) as",
    `uint256. \`chainId\` is the chain id of the agent's network (\`chainId\` in GET /wallet/agents): ${onNetworks(ctx)} here. Two domains:`,
    "",
    `- policy domain: \`{ name: "${DOMAIN_NAME}", version: "${DOMAIN_VERSION}", chainId: <the agent's chain id>, verifyingContract: <the agent's address> }\``,
    "  (the agent wallet is its SpendPolicy contract: `policyContract` in GET /limits equals `agentAddress`, known before deployment);",
    `- service domain: \`{ name: "${DOMAIN_NAME}", version: "${DOMAIN_VERSION}", chainId: <the agent's chain id> }\`.`,
    "",
    "```",
    typesBlock("policy domain: POST /limits (deploy or update)", SET_POLICY_TYPES),
    typesBlock("policy domain: POST /agents/:address/pause", SET_PAUSED_TYPES),
    typesBlock("policy domain: operator rotation (contract only)", SET_OPERATOR_TYPES),
    typesBlock("policy domain: POST /agents/:address/withdraw (token 0x0 = ETH; amount in the token's base units)", WITHDRAW_TYPES),
    typesBlock("policy domain: POST /agents/:address/owner (signed by the current owner)", SET_OWNER_TYPES),
    typesBlock('policy domain: POST /approvals/:id/approve and /deny (action "approve" or "deny")', APPROVAL_DECISION_TYPES),
    typesBlock("service domain: POST /agents/link", LINK_AGENT_TYPES),
    "```",
    "",
    "`merchants`: the allowlist in clear, one `Merchant` per entry: normalise each entry (trim, lower case, IDNA to ASCII,",
    "no trailing dot, no scheme, port or path; `*.example.com` for any subdomain, `*` for any merchant), drop duplicates,",
    "sort in byte order (the contract refuses another order, and an entry that is no normalised host name), then give",
    "each its own daily cap in base units",
    "(`merchantCaps`; 0 = none), its payee (`payees`; the zero address = any payee) and whether its sellers must sign their",
    "offers (`requireSignedOffer`; a rule the service keeps). At most 64 entries; an entry with any payee may not admit a",
    "pinned one (`*.example.com` over a pinned `api.example.com`: 400 here, refused by the contract too). The owner's",
    "wallet shows every entry, cap and payee; the contract derives the Merkle root payments prove against from exactly",
    'these (`allowlistRoot` in GET /limits). The empty list allows nothing. In SetPolicy, 0 means "no such limit" for',
    "hourlyBudget, weeklyBudget, monthlyBudget, lifetimeBudget, maxPaymentsPerHour and validUntil; maxSwapSlippageBps 0",
    "means no swaps (see POST /pay). Owner sign-in (SIWE, EIP-4361) uses personal_sign, not EIP-712.",
    "",
    "Example (ethers v6), signing a policy for POST /limits:",
    "",
    "```js",
    `const domain = { name: "SpendGate", version: "1", chainId: ${chainId}, verifyingContract: policyContract }; // the agent's chain id`,
    `const types = ${JSON.stringify(SET_POLICY_TYPES)};`,
    "const timestamp = Math.floor(Date.now() / 1000);",
    'const ANY = "0x0000000000000000000000000000000000000000";',
    "const merchants = [...allowlist].sort().map((entry) => ({ entry, dailyCap: 0n, payee: payees[entry] ?? ANY, requireSignedOffer: false }));",
    "const message = {",
    "  agent, perTxLimit: 5_000000n, dailyBudget: 20_000000n, merchants, approvalThreshold: 2_000000n,",
    "  hourlyBudget: 0n, weeklyBudget: 60_000000n, monthlyBudget: 0n, lifetimeBudget: 0n, maxPaymentsPerHour: 30n,",
    "  validUntil: 0n, maxSwapSlippageBps: 0n, swapTwapSeconds: 0n, minSwapRate: 0n, timestamp,",
    "};",
    "const humanSignature = await owner.signTypedData(domain, types, message);",
    '// POST /limits { agentAddress: agent, perTxLimit: "5", dailyBudget: "20", allowlist, payees, approvalThreshold: "2",',
    '//   weeklyBudget: "60", maxPaymentsPerHour: 30, humanSignature, timestamp } (absent fields are 0)',
    "```",
    "",
  ].join("\n");
}

function table(header: string, rows: [string, string][]): string {
  return [`| ${header} |`, "|---|---|", ...rows.map(([a, b]) => `| \`${a}\` | ${cell(b)} |`)].join("\n") + "\n";
}

export function buildApiDocs(ctx: DocsContext, operations: readonly AnyOperation[]): string {
  const openapi = buildOpenApi(ctx, operations);
  const routes = documented(operations);
  const set = new SchemaSet();
  Object.assign(set.components, openapi.components.schemas);
  const out: string[] = [
    "# SpendGate API reference",
    "",
    `Base URL: \`${ctx.baseUrl}\`. The same API as OpenAPI 3.1: \`${ctx.baseUrl}/openapi.json\`. Generated by the service from`,
    "its own request and response schemas and route list, so it matches what the service does.",
    "",
    "## Conventions",
    "",
    '- Amounts are decimal strings in USDC with at most 6 decimals (`"1.25"`); on-chain and in signatures they are base units.',
    "- Addresses are 0x-prefixed hex; answers use EIP-55 checksums. Timestamps in answers are ISO 8601 strings.",
    "- Bodies are JSON (`Content-Type: application/json`); unknown fields in a request body are refused (400).",
    '- Errors: `{ "error": "<code>", "message": "…", "status": <http status> }`, plus `details` for field problems. Every route',
    "  can also answer 429 `rate_limited` (with `Retry-After`) and 500 `internal`; an unknown path answers 404 `not_found`.",
    "",
    "## Authentication",
    "",
    table("mode | meaning", Object.entries(AUTH_MODES)),
    "`Authorization: Bearer <API key>`. A key present but unknown, revoked or expired is 401 on every route.",
    "",
    "## Endpoints",
    "",
    "| method | path | auth | summary |",
    "|---|---|---|---|",
    ...routes.map((r) => `| ${r.method} | \`${r.path}\` | ${r.auth} | ${cell(r.summary)} |`),
    "",
  ];
  for (const route of routes) {
    const op = openapi.paths[openApiPath(route.path)][route.method.toLowerCase()];
    out.push(routeSection(route, op, set));
  }

  out.push(
    "## MCP tools",
    "",
    `\`POST ${ctx.baseUrl}/mcp\` with \`Authorization: Bearer <apiKey>\` and \`X-Agent-Address: <agentAddress>\` (optional with an agent key, which names its one agent).`,
  );
  out.push("Each tool has an input and an output JSON Schema (tools/list). A blocked payment, a refusal and a service error are");
  out.push("`isError: true` results; a service error's text is the REST error body. No tool approves, denies or changes limits.", "");
  for (const tool of TOOLS) {
    out.push(`### ${tool.name}`, "", tool.description, "", "Input:", "", rowsTable(fieldRows(set.convert(tool.input, "input"), set)));
    out.push("Output (`structuredContent`):", "", rowsTable(fieldRows(set.convert(tool.output, "output"), set)));
  }

  out.push("## Schemas", "");
  for (const [name, schema] of Object.entries(set.components).sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`### ${name}`, "");
    if (schema.description) out.push(schema.description, "");
    out.push(rowsTable(fieldRows(schema, set)));
  }

  out.push("## Error codes", "", "| code | status | meaning |", "|---|---|---|");
  for (const [code, doc] of Object.entries(ERROR_CODES)) out.push(`| \`${code}\` | ${doc.status} | ${cell(doc.meaning)} |`);
  out.push("", "## Block reasons", "", '`reason` of a blocked payment (POST /pay 422, `status: "blocked"`):', "");
  out.push(table("reason | meaning", Object.entries(BLOCK_REASONS)));
  out.push("## Ledger statuses", "", table("status | meaning", Object.entries(LEDGER_STATUSES)));
  out.push(signingSection(ctx));
  return out.join("\n");
}
