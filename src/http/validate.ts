/** validate(schemas) returns a named middleware that parses body and query with zod into ctx.state.input. */
import bodyParser from "koa-bodyparser";
import type { z } from "zod";
import { badRequest } from "../errors";
import type { Middleware } from "./types";

export function formatIssues(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.join(".") || "(root)", message: i.message }));
}

function parse<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
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

export function validate(schemas: { body?: z.ZodType; query?: z.ZodType }): Middleware {
  return async function validateInput(ctx, next) {
    const input: Record<string, unknown> = {};
    if (schemas.query) Object.assign(input, parse(schemas.query, { ...ctx.query }, "query"));
    if (schemas.body) {
      await readJson(ctx, () => Promise.resolve());
      const body = (ctx.request as unknown as { body?: unknown }).body;
      Object.assign(input, parse(schemas.body, body === undefined ? {} : body, "request body"));
    }
    ctx.state.input = input;
    await next();
  };
}
