/** Bearer authentication: resolves the key into ctx.state.principal; 401 for a key that is present but wrong. */
import { timingSafeEqual } from "node:crypto";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { rateLimited, unauthorized } from "../errors";
import type { KeyService, KeyUse } from "../services/keys";
import type { Middleware } from "../api/types";

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The operators' metrics route (routes/metrics.ts): its token is checked there. */
export const METRICS_PATH = "/metrics";

export const UNKNOWN_KEY = "The API key is unknown, revoked or expired.";

export function bearerToken(header: string): string | null {
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

/**
 * What a remembered key lookup may answer (KeyService.lookup): reads an agent or owner polls, which reveal no secret
 * and change nothing but housekeeping any poll does (GET /approvals expires approvals past their time); a payment, on
 * a lookup at most PAYING_KEY_MEMORY_MS old or one the revocation mark stands for (a key revoked elsewhere stops
 * paying within PAYING_KEY_MEMORY_MS); and /mcp, which reads the key again for any message but one of a read-only tool
 * on this service's own data or a payment as POST /pay's lookup would stand for it (routes/mcp.ts).
 */
export function remembersKey(method: string, path: string): KeyUse {
  if (method === "POST") return path === "/pay" ? "pay" : path === "/mcp" ? "read" : "fresh";
  return method === "GET" && (path === "/ledger" || path === "/limits" || path === "/approvals" || path.startsWith("/ledger/"))
    ? "read"
    : "fresh";
}

/**
 * Resolves the Bearer key. A client address with more than `failuresPerMinute` failed authentications in a minute
 * gets 429 for every keyed request until the minute is over: keys cannot be guessed (256 bits), a registration
 * token might be, and this keeps guessing slow.
 */
export function authenticate(
  keys: KeyService,
  registrationToken: string | undefined,
  failuresPerMinute: number,
  onRefused: () => void = () => undefined,
): Middleware {
  const failures = new RateLimiterMemory({ points: failuresPerMinute, duration: 60 });
  const refuse = async (ip: string, message: string): Promise<never> => {
    try {
      await failures.consume(ip);
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res;
      onRefused();
      throw rateLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
    }
    throw unauthorized(message);
  };
  return async function resolvePrincipal(ctx, next) {
    const header = ctx.get("Authorization");
    // GET /metrics reads its own Bearer token (METRICS_TOKEN), which is no API key.
    if (header && ctx.path !== METRICS_PATH) {
      // An address that guessed wrong too often is slowed down, but a valid key from it still works: guesses from
      // a shared address (a NAT, a proxy) must not lock its real users out.
      const blocked = async () => {
        const state = await failures.get(ctx.ip);
        if (state && state.remainingPoints <= 0) {
          onRefused();
          throw rateLimited(Math.max(1, Math.ceil(state.msBeforeNext / 1000)));
        }
      };
      const token = bearerToken(header);
      if (!token) {
        await blocked();
        return refuse(ctx.ip, "The Authorization header must be 'Bearer <API key>'.");
      }
      if (registrationToken && sameSecret(token, registrationToken)) {
        ctx.state.principal = { role: "registrar" };
      } else {
        const found = await keys.lookup(token, remembersKey(ctx.method, ctx.path));
        if (!found) {
          await blocked();
          return refuse(ctx.ip, UNKNOWN_KEY);
        }
        ctx.state.principal = found.principal;
        ctx.state.principalRemembered = found.remembered;
        ctx.state.principalAge = found.age;
      }
    }
    await next();
  };
}
