/** createApp(deps) builds the Koa app without listening; index.ts and the tests listen. */
import Koa from "koa";
import type Router from "@koa/router";
import type { Logger } from "pino";
import type { Services } from "./services";
import { authenticate } from "./http/auth";
import { errorsAndLogging, rateLimit, requireJsonBodies } from "./http/middleware";
import { knownMethods } from "./http/transport";
import { accountRoutes } from "./http/routes/accounts";
import { limitRoutes } from "./http/routes/limits";
import { systemRoutes } from "./http/routes/system";
import type { AppState } from "./http/types";

export interface AppDeps {
  services: Services;
  logger: Logger;
  /** Routers mounted after the core ones (payments, seller, MCP, dashboard). */
  routers?: Router<AppState>[];
}

/** Paths that read their own bodies (x402 seller route, MCP) instead of the JSON parser. */
const OWN_BODY = (path: string) => path.startsWith("/sell/") || path === "/mcp";

export function createApp({ services, logger, routers = [] }: AppDeps): Koa<AppState> {
  // Behind proxies, the client address is the one the last TRUSTED_PROXY_HOPS proxies saw (entries a client wrote
  // into X-Forwarded-For itself are further left and never read).
  const hops = services.ctx.config.trustedProxyHops;
  const app = new Koa<AppState>({ proxy: hops > 0, maxIpsCount: hops });
  app.silent = true; // errors are logged by errorsAndLogging, once
  app.use(errorsAndLogging(logger));
  app.use(knownMethods());
  // Limits before anything reads a body or a key, so that every request counts (bad keys and bodies too).
  app.use(rateLimit(services.ctx.config.rateLimitPerMinute));
  app.use(requireJsonBodies(OWN_BODY));
  app.use(authenticate(services.ctx.keys, services.ctx.config.registrationToken, services.ctx.config.authFailuresPerMinute));
  for (const router of [systemRoutes(services), accountRoutes(services), limitRoutes(services), ...routers]) {
    app.use(router.routes());
    app.use(router.allowedMethods({ throw: false }));
  }
  return app;
}
