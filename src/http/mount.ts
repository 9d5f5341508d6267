/** Mounts declared operations on one router: auth by mode, then query, body and path parameters parsed with the schema. */
import Router from "@koa/router";
import bodyParser from "koa-bodyparser";
import { z } from "zod";
import { badRequest, forbidden, formatIssues, notFound, unauthorized } from "../errors";
import type { AnyOperation, AuthMode, OperationDeps } from "../api/operation";
import type { AppContext, AppState, Middleware } from "../api/types";

function parse(schema: z.ZodType, value: unknown, where: string): unknown {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issues = formatIssues(result.error);
    const summary = issues.map((i) => `${i.path} ${i.message}`).join("; ");
    throw badRequest(`Invalid ${where}: ${summary}`, issues);
  }
  return result.data;
}

/** JSON bodies are read only here: by routes that take one, after their authentication (a refused body stays unread). */
const readJson = bodyParser({ enableTypes: ["json"], jsonLimit: "64kb", strict: true });

const ROLES: Partial<Record<AuthMode, ("agent" | "owner")[]>> = { agent: ["agent"], owner: ["owner"], either: ["agent", "owner"] };

/** The principal the auth mode requires: 401 without a key, 403 for a key of another role. */
function checkAuth(ctx: AppContext, auth: AuthMode): void {
  const allowed = ROLES[auth];
  if (!allowed) return;
  const p = ctx.state.principal;
  if (!p) throw unauthorized("This call needs 'Authorization: Bearer <API key>'.");
  if (p.role === "registrar" || !allowed.includes(p.role)) {
    throw forbidden(
      auth === "owner"
        ? "Only the owner may do this: sign in with your wallet (SIWE) and use the owner key."
        : auth === "agent"
          ? "Only an agent pays: use the agent's own key (owners approve, deny and set limits)."
          : "This key may not make this call.",
    );
  }
}

const part = (input: z.ZodObject, name: "params" | "query" | "body"): z.ZodType | undefined => input.shape[name] as z.ZodType | undefined;

/** Auth, then query, body and path parameters (a malformed path parameter is 404, like a missing resource). */
async function readInput(op: AnyOperation, ctx: AppContext): Promise<Record<string, unknown>> {
  checkAuth(ctx, op.auth);
  const input: Record<string, unknown> = {};
  const query = part(op.input, "query");
  const body = part(op.input, "body");
  const params = part(op.input, "params");
  if (query) input.query = parse(query, { ...ctx.query }, "query");
  if (body) {
    await readJson(ctx, () => Promise.resolve());
    const raw = (ctx.request as { body?: unknown }).body;
    input.body = parse(body, raw === undefined ? {} : raw, "request body");
  }
  if (params) {
    const raw = ctx.params as Record<string, string>;
    const parsed = params.safeParse({ ...raw });
    if (!parsed.success) throw notFound(op.notFound?.(raw) ?? `No ${op.method} ${ctx.path}.`);
    input.params = parsed.data;
  }
  return input;
}

function handlerOf(op: AnyOperation, deps: OperationDeps): Middleware {
  return async function runOperation(ctx, next) {
    const input = await readInput(op, ctx);
    const req = { input, principal: ctx.state.principal, ctx, deps };
    if ("serve" in op) return op.serve(req, next);
    const reply = await op.handle(req);
    ctx.status = reply.status;
    if (reply.headers) ctx.set(reply.headers);
    ctx.body = reply.body;
  };
}

/** One router for every operation, registered in the order given (pages before the API paths they share). */
export function mountOperations(operations: readonly AnyOperation[], deps: OperationDeps): Router<AppState> {
  const router = new Router<AppState>();
  for (const op of operations) router.register(op.path, [op.method], handlerOf(op, deps));
  return router;
}
