/** createApp(deps) builds the Koa app without listening; index.ts and the tests listen. */
import Koa from "koa";
import type { Logger } from "pino";
import type { Services } from "./services";
import type { NetworkServices } from "./services/networks";
import { authenticate } from "./http/auth";
import { errorsAndLogging, rateLimit, requireJsonBodies } from "./http/middleware";
import { mountOperations } from "./http/mount";
import { MOUNT_ORDER, OPERATIONS } from "./http/operations";
import { prepareDashboard } from "./http/routes/dashboard";
import { knownMethods } from "./http/transport";
import type { DemoSellers, Faucet } from "./api/operation";
import type { AppState } from "./api/types";
import type { WebhookService } from "./webhooks/endpoints";

export interface AppDeps {
  /** The first network's services. */
  services: Services;
  /** Every network's (a request for an agent is served by its network's). */
  networks: NetworkServices;
  logger: Logger;
  webhooks: WebhookService;
  /** The dev faucet of each network, in embedded mode only (POST /dev/faucet answers 404 without them). */
  faucets?: ReadonlyMap<string, Faucet>;
  demoSellers?: DemoSellers;
}

/** Paths that read their own bodies (x402 seller route, MCP) instead of the JSON parser. */
const OWN_BODY = (path: string) => path.startsWith("/sell/") || path === "/mcp";

export function createApp({ services, networks, logger, webhooks, faucets, demoSellers }: AppDeps): Koa<AppState> {
  // Behind proxies, the client address is the one the last TRUSTED_PROXY_HOPS proxies saw (entries a client wrote
  // into X-Forwarded-For itself are further left and never read).
  const hops = services.ctx.config.trustedProxyHops;
  const app = new Koa<AppState>({ proxy: hops > 0, maxIpsCount: hops });
  app.silent = true; // errors are logged by errorsAndLogging, once
  const { config, telemetry } = services.ctx;
  // The request's span encloses everything it does, its final status included (only when traces are exported).
  if (telemetry.tracing) app.use(telemetry.tracing.middleware());
  app.use(errorsAndLogging(logger));
  app.use(knownMethods());
  // Limits before anything reads a body or a key, so that every request counts (bad keys and bodies too).
  app.use(rateLimit(config.rateLimitPerMinute, () => telemetry.metrics.rateLimit("requests")));
  app.use(requireJsonBodies(OWN_BODY));
  app.use(
    authenticate(services.ctx.keys, config.registrationToken, config.authFailuresPerMinute, () =>
      telemetry.metrics.rateLimit("auth_failures"),
    ),
  );
  // Every route of the service, from its operation declaration (src/http/operations.ts), on one router.
  const router = mountOperations(MOUNT_ORDER, { s: services, networks, webhooks, operations: OPERATIONS, faucets, demoSellers });
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: false }));
  prepareDashboard(logger);
  return app;
}
