/**
 * The owner dashboard: the pages (/, /onboarding, /agents, /approvals, /ledger), their bundled assets, and two small
 * public JSON answers the pages need before sign-in (the page config and an agent's public summary). Mounted before
 * the REST routers: a page path that is also an endpoint passes API requests on.
 */
import Router from "@koa/router";
import type { z } from "zod";
import type { DashboardConfigResponse as DashboardConfigSchema } from "../../schemas/dashboard";
import { ASSET_PREFIX, dashboardBundle } from "../../dashboard/build";
import { PAGES, renderBuildError, renderPage } from "../../dashboard/pages";
import { notFound } from "../../errors";
import { Address } from "../../schemas/common";
import type { Services } from "../../services";
import type { AppContext, AppState } from "../types";

/** Pages run only our own bundled script; API calls go to this origin; wallets' icons are data: URLs (EIP-6963). */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** GET /dashboard/config: what the pages need to talk to wallets (for the API reference too). */

/** Chains a wallet can be asked to add with a public RPC (the service's own RPC URL may carry a provider key). */
const PUBLIC_CHAINS: Record<number, { name: string; rpcUrl: string }> = {
  8453: { name: "Base", rpcUrl: "https://mainnet.base.org" },
  84532: { name: "Base Sepolia", rpcUrl: "https://sepolia.base.org" },
};

export function dashboardRoutes(s: Services): Router<AppState> {
  const router = new Router<AppState>();
  const { config, logger } = s.ctx;
  // Start building now so the first page is quick; a failure is logged here and answered per request below.
  dashboardBundle().catch((err: unknown) => logger.error({ err }, "dashboard build failed"));

  const securityHeaders = (ctx: AppContext) => {
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Referrer-Policy", "no-referrer");
    ctx.set("X-Frame-Options", "DENY");
  };

  for (const page of PAGES) {
    router.get(page.path, async (ctx, next) => {
      // /approvals and /ledger are REST endpoints too: only a browser's navigation (HTML first, no key) gets the page.
      if (ctx.get("Authorization") || ctx.accepts("json", "html") !== "html") return next();
      ctx.vary("Accept");
      securityHeaders(ctx);
      ctx.set("Cache-Control", "no-store");
      ctx.type = "text/html; charset=utf-8";
      try {
        ctx.set("Content-Security-Policy", PAGE_CSP);
        ctx.body = renderPage(page, await dashboardBundle());
      } catch (err) {
        logger.error({ err }, "dashboard build failed");
        ctx.status = 503;
        ctx.body = renderBuildError();
      }
    });
  }

  router.get(`${ASSET_PREFIX}:name`, async (ctx) => {
    const asset = (await dashboardBundle()).assets.get(ctx.params.name);
    if (!asset) throw notFound(`No dashboard asset ${ctx.params.name}.`);
    securityHeaders(ctx);
    ctx.set("Cache-Control", "public, max-age=31536000, immutable");
    ctx.type = asset.type;
    ctx.body = asset.body;
  });

  router.get("/dashboard/config", async (ctx) => {
    const known = PUBLIC_CHAINS[config.chainId];
    ctx.set("Cache-Control", "no-store");
    const body: z.infer<typeof DashboardConfigSchema> = {
      mode: config.embeddedChain ? "embedded" : "production",
      chainId: config.chainId,
      chainIdHex: `0x${config.chainId.toString(16)}`,
      chainName: config.embeddedChain
        ? `SpendGate embedded chain (chain id ${config.chainId})`
        : (known?.name ?? `Chain ${config.chainId}`),
      // Only the embedded chain's RPC is shown: in production RPC_URL may be a private endpoint with a key in it.
      rpcUrl: config.embeddedChain ? (config.rpcUrl ?? null) : (known?.rpcUrl ?? null),
      explorerUrl: config.explorerUrl,
      baseUrl: s.ctx.urls.base,
      usdcAddress: config.usdcAddress,
      signatureWindowSeconds: config.signatureWindowSeconds,
      serverTime: Math.floor(Date.now() / 1000),
    };
    ctx.body = body;
  });

  // Public: the onboarding page shows the agent before its owner has signed in. No keys, no email.
  router.get("/agents/:address", async (ctx) => {
    const address = Address.safeParse(ctx.params.address);
    const agent = address.success ? await s.ctx.store.agents.findOne({ address: address.data }) : null;
    if (!agent) throw notFound(`No agent with address ${ctx.params.address}. Check the activation link your agent gave you.`);
    // Who owns an agent is told only to who holds its activation code (or a key that may act for it).
    const code = typeof ctx.query.code === "string" ? ctx.query.code : "";
    const p = ctx.state.principal;
    const entitled =
      s.agents.isActivationCode(agent.address, code) ||
      (p?.role === "agent" && p.agentAddress === agent.address) ||
      (p?.role === "owner" && p.ownerAddress === agent.ownerAddress);
    ctx.body = {
      address: agent.address,
      label: agent.label,
      createdAt: agent.createdAt.toISOString(),
      ownerAddress: entitled ? agent.ownerAddress : null,
      policyContract: agent.policyAddress,
      deployed: await s.ctx.chain.isDeployed(agent.policyAddress),
    };
  });

  return router;
}
