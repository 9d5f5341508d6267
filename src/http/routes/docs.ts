/** GET /skill.md, /references/api_docs.md and /openapi.json: generated on first request (the URLs are known then). */
import Router from "@koa/router";
import { buildApiDocs } from "../../docs/markdown";
import { buildOpenApi } from "../../docs/openapi";
import { buildSkill } from "../../docs/skill";
import type { Services } from "../../services";
import type { AppContext, AppState } from "../types";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const VERSION: string = require("../../../package.json").version;

export function docsRoutes(s: Services): Router<AppState> {
  const cache = new Map<string, string>();
  const urls = (ctx: AppContext) => ({
    baseUrl: s.ctx.urls.base || ctx.origin,
    dashboardUrl: s.ctx.urls.dashboard || s.ctx.urls.base || ctx.origin,
  });
  // Cached once the service knows its public URLs; never keyed by a client's Host header.
  const once = (key: string, make: () => string) => {
    if (!s.ctx.urls.base) return make();
    if (!cache.has(key)) cache.set(key, make());
    return cache.get(key)!;
  };

  const router = new Router<AppState>();
  router.get("/skill.md", async (ctx) => {
    const { baseUrl, dashboardUrl } = urls(ctx);
    ctx.type = "text/markdown; charset=utf-8";
    ctx.body = once("skill", () => buildSkill(baseUrl, dashboardUrl));
  });
  router.get("/references/api_docs.md", async (ctx) => {
    const u = urls(ctx);
    ctx.type = "text/markdown; charset=utf-8";
    ctx.body = once("md", () => buildApiDocs({ ...u, version: VERSION }));
  });
  router.get("/openapi.json", async (ctx) => {
    const u = urls(ctx);
    ctx.type = "application/json";
    ctx.body = once("openapi", () => JSON.stringify(buildOpenApi({ ...u, version: VERSION }), null, 2));
  });
  return router;
}
