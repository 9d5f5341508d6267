/**
 * The owner dashboard's routes, for the route registry (spread into ROUTES; test/docs checks both directions).
 */
import { z } from "zod";
import type { RouteDoc } from "./registry";
import { AgentPublic, DashboardConfigResponse as DashboardConfig } from "../schemas/dashboard";

const html = (description: string) => ({ description, contentType: "text/html; charset=utf-8" });

export const DASHBOARD_ROUTES: RouteDoc[] = [
  ...["/", "/onboarding", "/agents"].map((path): RouteDoc => ({
    method: "GET",
    path,
    tag: "Dashboard",
    summary: `Owner dashboard page ${path}`,
    auth: "none",
    responses: { 200: html("the page"), 503: html("the dashboard bundle could not be built") },
    errors: [],
  })),
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
