/** Cross-cutting middleware: request ids and logs, the error shape, JSON-only bodies, rate limits. */
import { createHash, randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import {
  AppError,
  UNSUPPORTED_ENCODING,
  appError,
  errorBody,
  httpError,
  notFound,
  rateLimited,
  toAppError,
  unsupportedMediaType,
} from "../errors";
import { bearerToken } from "./auth";
import type { Middleware } from "../api/types";

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** First middleware: request id, access log, and every error turned into { error, message, status }. */
export function errorsAndLogging(logger: Logger): Middleware {
  return async function handleErrors(ctx, next) {
    const incoming = ctx.get("X-Request-Id");
    ctx.state.requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set("X-Request-Id", ctx.state.requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
      // Answers no handler wrote (no route, or the router's 405/501) get the error shape too.
      if (ctx.status >= 400 && ctx.body == null && ctx.respond !== false) {
        throw emptyErrorAnswer(ctx.status, ctx.method, ctx.path, ctx.response.get("Allow"));
      }
    } catch (err) {
      const appError = toAppError(err);
      if (appError.status >= 500 && !(err instanceof AppError)) {
        logger.error({ err, requestId: ctx.state.requestId, path: ctx.path }, "unhandled error");
      }
      ctx.status = appError.status;
      for (const [k, v] of Object.entries(appError.headers ?? {})) ctx.set(k, v);
      ctx.body = errorBody(appError);
    } finally {
      // A request whose body was never read (refused before it: 401, 404, 413, 415...) closes its connection
      // instead of making the server drain what the client keeps sending.
      if (hasBody(ctx) && !ctx.req.complete) {
        ctx.set("Connection", "close");
        ctx.res.once("finish", () => ctx.req.socket?.destroy());
      }
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
        { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 },
        "request",
      );
    }
  };
}

function emptyErrorAnswer(status: number, method: string, path: string, allow: string): AppError {
  if (status === 404) return notFound(`No route for ${method} ${path}.`);
  if (status === 405 || status === 501)
    return appError("method_not_allowed", `${method} is not allowed on ${path}${allow ? `; use ${allow}` : ""}.`);
  return httpError(status, status < 500 ? "Bad request." : "Something went wrong on our side.");
}

function hasBody(ctx: { get(name: string): string }): boolean {
  return Number(ctx.get("Content-Length") || 0) > 0 || ctx.get("Transfer-Encoding") !== "";
}

const ENCODINGS = new Set(["", "identity", "gzip", "x-gzip", "deflate", "br"]);

/**
 * Bodies of POST/PUT/PATCH must be JSON (the seller and MCP routes do their own parsing), in an encoding we decode:
 * refused before a byte of the body is read.
 */
export function requireJsonBodies(exempt: (path: string) => boolean): Middleware {
  return async function jsonOnly(ctx, next) {
    if (hasBody(ctx)) {
      const encoding = ctx.get("Content-Encoding").trim().toLowerCase();
      if (!ENCODINGS.has(encoding)) {
        throw unsupportedMediaType(UNSUPPORTED_ENCODING);
      }
      if (["POST", "PUT", "PATCH"].includes(ctx.method) && !exempt(ctx.path) && !ctx.is("application/json")) throw unsupportedMediaType();
    }
    await next();
  };
}

/**
 * Per-principal request budget per minute; 429 with Retry-After past it. The principal is the Bearer key itself
 * (however the header is spelt or spaced), else the client address; /health and /health/* are never limited (load
 * balancers and probes).
 */
export function rateLimit(pointsPerMinute: number, onRefused: () => void = () => undefined): Middleware {
  const limiter = new RateLimiterMemory({ points: pointsPerMinute, duration: 60 });
  return async function limitRate(ctx, next) {
    if (ctx.path === "/health" || ctx.path.startsWith("/health/")) {
      await next();
      return;
    }
    const token = bearerToken(ctx.get("Authorization"));
    const key = token ? `k:${createHash("sha256").update(token).digest("hex")}` : `ip:${ctx.ip}`;
    try {
      await limiter.consume(key);
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res;
      onRefused();
      throw rateLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
    }
    await next();
  };
}
