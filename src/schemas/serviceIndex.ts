/** GET / for API clients: where to start. */
import { z } from "zod";

export const ServiceIndex = z
  .object({
    service: z.literal("SpendGate"),
    version: z.string(),
    mode: z.enum(["embedded", "production"]),
    dashboard: z.string().meta({ description: "the owner dashboard (open it in a browser)" }),
    health: z.string(),
    skill: z.string().meta({ description: "the onboarding file for agents" }),
    apiDocs: z.string(),
    openapi: z.string(),
    mcp: z.string(),
    note: z.string(),
  })
  .meta({ id: "ServiceIndex" });
