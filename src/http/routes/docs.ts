/** GET /skill.md, /references/api_docs.md and /openapi.json: generated on first request (the URLs are known then). */
import { z } from "zod";
import { buildApiDocs } from "../../docs/markdown";
import { buildOpenApi, type DocsContext } from "../../docs/openapi";
import { NETWORKS } from "../../chain/networks";
import { buildSkill } from "../../docs/skill";
import type { Services } from "../../services";
import { ServiceIndex } from "../../schemas/serviceIndex";
import { type OperationDeps, json, markdown, operation, rawOperation, reply } from "../../api/operation";
import type { AppContext } from "../../api/types";
import { VERSION } from "../../version";

const caches = new WeakMap<Services, Map<string, string>>();

/** The deployment's URLs (or the request's origin before the service knows them) and its networks. */
const urls = (s: Services, ctx: AppContext): DocsContext => ({
  baseUrl: s.ctx.urls.base || ctx.origin,
  dashboardUrl: s.ctx.urls.dashboard || s.ctx.urls.base || ctx.origin,
  version: VERSION,
  networks: s.ctx.config.networks.map((n) => ({ name: n.name, chainId: n.chainId, displayName: NETWORKS[n.name].displayName })),
});

/** Cached once the service knows its public URLs; never keyed by a client's Host header. */
function once(s: Services, key: string, make: () => string): string {
  if (!s.ctx.urls.base) return make();
  let cache = caches.get(s);
  if (!cache) caches.set(s, (cache = new Map<string, string>()));
  let text = cache.get(key);
  if (text === undefined) cache.set(key, (text = make()));
  return text;
}

const document = (path: string, summary: string, response: { description: string; contentType?: string }, key: string, type: string) =>
  rawOperation({
    method: "GET",
    path,
    tag: "Docs",
    summary,
    auth: "none",
    input: z.object({}),
    responses: { 200: response },
    errors: [],
    serve: ({ ctx, deps }) => {
      ctx.type = type;
      ctx.body = once(deps.s, key, () => render(key, urls(deps.s, ctx), deps));
      return Promise.resolve();
    },
  });

function render(key: string, u: DocsContext, deps: OperationDeps): string {
  if (key === "skill") return buildSkill(u.baseUrl, u.dashboardUrl, u);
  if (key === "md") return buildApiDocs(u, deps.operations);
  return JSON.stringify(buildOpenApi(u, deps.operations), null, 2);
}

export const DOC_OPERATIONS = [
  document(
    "/skill.md",
    "Onboarding file for agents (config, genesis, MCP registration, behaviour rules)",
    markdown("the onboarding markdown, with this deployment's URLs"),
    "skill",
    "text/markdown; charset=utf-8",
  ),
  document(
    "/references/api_docs.md",
    "This API reference as markdown",
    markdown("the API reference"),
    "md",
    "text/markdown; charset=utf-8",
  ),
  document("/openapi.json", "This API as an OpenAPI 3.1 document", { description: "the OpenAPI document" }, "openapi", "application/json"),
  // Browsers get the dashboard's overview at /; anything else (curl's Accept: */*) this short index.
  operation({
    method: "GET",
    path: "/",
    tag: "Docs",
    summary: "Where to start: the dashboard, the docs, the MCP server (browsers get the dashboard itself)",
    auth: "none",
    input: z.object({}),
    responses: { 200: json("the links", ServiceIndex) },
    errors: [],
    handle: ({ ctx, deps: { s } }) => {
      const { baseUrl, dashboardUrl } = urls(s, ctx);
      const links = {
        service: "SpendGate",
        version: VERSION,
        mode: s.ctx.config.embeddedChain ? "embedded" : "production",
        dashboard: `${dashboardUrl}/`,
        health: `${baseUrl}/health`,
        skill: `${baseUrl}/skill.md`,
        apiDocs: `${baseUrl}/references/api_docs.md`,
        openapi: `${baseUrl}/openapi.json`,
        mcp: `${baseUrl}/mcp`,
        note: "Agents: read the skill file. Owners: open the dashboard in a browser. Every endpoint is in the API reference.",
      } as const;
      return Promise.resolve(reply(200, links));
    },
  }),
];
