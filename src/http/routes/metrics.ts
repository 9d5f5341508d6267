/**
 * GET /metrics: Prometheus metrics of this instance, for its operators (outside the agent API of the interface
 * specification). With METRICS_TOKEN set it wants that Bearer token; without, it answers only clients on the loopback
 * interface whose request no proxy forwarded (a proxy on the same machine would make every client look local).
 */
import { timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { forbidden, unauthorized } from "../../errors";
import { METRICS_PATH, bearerToken } from "../auth";
import { rawOperation } from "../../api/operation";
import type { AppContext } from "../../api/types";

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Throws unless the request may read the metrics. */
function checkScraper(ctx: AppContext, token: string | undefined): void {
  if (token) {
    const given = bearerToken(ctx.get("Authorization"));
    if (!given || !sameSecret(given, token)) throw unauthorized("GET /metrics needs 'Authorization: Bearer <METRICS_TOKEN>'.");
    return;
  }
  const forwarded = ctx.get("X-Forwarded-For") || ctx.get("Forwarded") || ctx.get("X-Real-IP");
  if (forwarded || !LOOPBACK.test(ctx.req.socket.remoteAddress ?? "")) {
    throw forbidden("GET /metrics answers clients on this machine only; set METRICS_TOKEN to scrape it from elsewhere.");
  }
}

export const METRICS_OPERATIONS = [
  rawOperation({
    method: "GET",
    path: METRICS_PATH,
    tag: "Operations",
    summary: "Prometheus metrics of this instance (an operator route, outside the agent API)",
    description:
      "Prometheus text format: payments by outcome and reason, the time of each payment step, JSON-RPC calls and errors by method, indexer lag, webhook queue and attempts, rate-limit refusals, and the process's own metrics. " +
      "Each instance answers for itself (scrape every instance). The metrics and what to alert on are described in docs/production.md.",
    auth: "metrics",
    input: z.object({}),
    responses: { 200: { description: "the metrics", contentType: "text/plain; version=0.0.4; charset=utf-8" } },
    errors: ["unauthorized", "forbidden"],
    // A store or chain that does not answer leaves its gauges out; the scrape itself still answers.
    noDependencies: true,
    serve: async ({ ctx, deps: { s } }) => {
      checkScraper(ctx, s.ctx.config.metricsToken);
      const { contentType, body } = await s.ctx.telemetry.metrics.scrape();
      ctx.type = contentType;
      ctx.set("Cache-Control", "no-store");
      ctx.body = body;
    },
  }),
];
