/** Tool results: structured content plus its JSON as text; refusals and service errors as isError results. */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { z } from "zod";
import { AppError, errorBody, toAppError } from "../errors";

/**
 * A successful result. The data is parsed with the tool's output schema, so clients get exactly what it documents,
 * in the structured content and in its text alike.
 */
export function okResult(schema: z.ZodType, data: unknown, logger: Logger, lead?: string): CallToolResult {
  const structuredContent = structured(schema, data, logger);
  return { content: [{ type: "text", text: withLead(lead, structuredContent) }], structuredContent };
}

/** A refusal the agent must act on (a blocked payment): isError, with the same structured content. */
export function refusalResult(schema: z.ZodType, data: unknown, logger: Logger, lead: string): CallToolResult {
  return { ...okResult(schema, data, logger, lead), isError: true };
}

/** Any error as an isError result in the REST error shape; internals are logged, never shown. */
export function errorResult(err: unknown, logger: Logger, tool: string): CallToolResult {
  const e = toAppError(err);
  if (!(err instanceof AppError)) logger.error({ err, tool }, "mcp tool failed");
  return { isError: true, content: [{ type: "text", text: JSON.stringify(errorBody(e)) }] };
}

export { errorBody };

function withLead(lead: string | undefined, data: unknown): string {
  return (lead ? `${lead}\n` : "") + JSON.stringify(data);
}

function structured(schema: z.ZodType, data: unknown, logger: Logger): Record<string, unknown> {
  const parsed = schema.safeParse(data);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  // A service answer that left its schema: keep the data (never lose a payment result), and say so in the logs.
  logger.error({ issues: parsed.error.issues }, "mcp tool output does not match its schema");
  return data as Record<string, unknown>;
}
