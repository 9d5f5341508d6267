/**
 * The owner dashboard's routes, for the route registry. Not in ROUTES yet: the dashboard router is not mounted in
 * this commit. When it is, add `...DASHBOARD_ROUTES` to ROUTES (registry.ts); test/docs checks both directions.
 */
import { z } from "zod";
import type { RouteDoc } from "./registry";

const html = (description: string) => ({ description, contentType: "text/html; charset=utf-8" });

export const DashboardConfig = z
  .object({
    mode: z.enum(["embedded", "production"]),
    chainId: z.number().int(),
    chainIdHex: z.string(),
    chainName: z.string(),
    rpcUrl: z.string().nullable().meta({ description: "embedded chain's RPC, or a public RPC of a known chain" }),
    explorerUrl: z.string(),
    baseUrl: z.string(),
    usdcAddress: z.string(),
    signatureWindowSeconds: z.number().int(),
  })
  .meta({ id: "DashboardConfig" });

export const AgentPublic = z
  .object({
    address: z.string(),
    label: z.string(),
    createdAt: z.string(),
    ownerAddress: z.string().nullable(),
    policyContract: z.string(),
    deployed: z.boolean(),
  })
  .meta({ id: "AgentPublic" });

export const DASHBOARD_ROUTES: RouteDoc[] = [
  ...["/", "/onboarding", "/agents"].map(
    (path): RouteDoc => ({
      method: "GET",
      path,
      tag: "Dashboard",
      summary: `Owner dashboard page ${path}`,
      auth: "none",
      responses: { 200: html("the page"), 503: html("the dashboard bundle could not be built") },
      errors: [],
    }),
  ),
  {
    method: "GET",
    path: "/dashboard/assets/:name",
    tag: "Dashboard",
    summary: "The dashboard's bundled scripts and styles",
    auth: "none",
    params: { name: { schema: z.string(), description: "asset file name" } },
    responses: { 200: { description: "the asset", contentType: "application/octet-stream" } },
    errors: ["not_found"],
  },
  {
    method: "GET",
    path: "/dashboard/config",
    tag: "Dashboard",
    summary: "What the pages need before sign-in: chain, URLs, USDC, signature window",
    auth: "none",
    responses: { 200: { description: "the page config", schema: DashboardConfig } },
    errors: [],
  },
  {
    method: "GET",
    path: "/agents/:address",
    tag: "Dashboard",
    summary: "An agent's public summary (the activation page shows it before sign-in)",
    auth: "none",
    params: { address: { schema: z.string(), description: "the agent's address" } },
    responses: { 200: { description: "the agent", schema: AgentPublic } },
    errors: ["not_found"],
  },
];
