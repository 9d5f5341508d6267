/** createApp(deps) builds the Koa app without listening; index.ts and the tests listen. */
import Koa from "koa";
import bodyParser from "koa-bodyparser";
import type Router from "@koa/router";
import type { Logger } from "pino";
import type { Services } from "./services";
import { authenticate } from "./http/auth";
import { errorsAndLogging, rateLimit, requireJsonBodies } from "./http/middleware";
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
  const app = new Koa<AppState>({ proxy: services.ctx.config.trustProxy });
  app.silent = true; // errors are logged by errorsAndLogging, once
  app.use(errorsAndLogging(logger));
  app.use(requireJsonBodies(OWN_BODY));
  app.use(async (ctx, next) => {
    if (OWN_BODY(ctx.path)) return next();
    return bodyParser({ enableTypes: ["json"], jsonLimit: "64kb", strict: true })(ctx, next);
  });
  // Limits before authentication, so that requests with bad keys count too.
  app.use(rateLimit(services.ctx.config.rateLimitPerMinute));
  app.use(authenticate(services.ctx.keys, services.ctx.config.registrationToken, services.ctx.config.authFailuresPerMinute));
  for (const router of [systemRoutes(services), accountRoutes(services), limitRoutes(services), ...routers]) {
    app.use(router.routes());
    app.use(router.allowedMethods({ throw: false }));
  }
  return app;
}
