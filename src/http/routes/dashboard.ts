/**
 * The owner dashboard: the pages (/, /onboarding, /agents, /policy, /approvals, /ledger, /webhooks), their bundled assets, and
 * two small public JSON answers the pages need before sign-in (the page config and an agent's public summary). Mounted
 * before the REST operations: a page path that is also an endpoint passes API requests on.
 */
import type { JsonRpcApiProvider } from "ethers";
import type { Logger } from "pino";
import { z } from "zod";
import { ASSET_PREFIX, dashboardBundle } from "../../dashboard/build";
import { PAGES, renderBuildError, renderPage } from "../../dashboard/pages";
import { notFound } from "../../errors";
import { AgentPublic, DashboardConfigResponse } from "../../schemas/dashboard";
import { Address } from "../../schemas/common";
import { networkOfChainId } from "../../chain/networks";
import type { Services } from "../../services";
import { agentView, explorerBase } from "../../services/presenters";
import { html, json, operation, rawOperation, reply } from "../../api/operation";
import type { AppContext } from "../../api/types";

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

/** Start building now so the first page is quick; a failure is logged here and answered per request. */
export function prepareDashboard(logger: Logger): void {
  dashboardBundle().catch((err: unknown) => logger.error({ err }, "dashboard build failed"));
}

/**
 * The chain's clock for owner signatures: the later of the latest block's time and the pending block's (a chain that
 * mines only on transactions, as the embedded one, makes no block while idle; nodes that build no pending block answer
 * it with the latest or nothing usable). Null when the chain does not answer: the page then uses the browser's clock.
 */
async function latestChainTime(provider: JsonRpcApiProvider): Promise<number | null> {
  const time = (raw: unknown): number | null => {
    const t = (raw as { timestamp?: unknown } | null)?.timestamp;
    return typeof t === "string" && /^0x[0-9a-f]{1,12}$/i.test(t) ? Number(t) : null;
  };
  const [latest, pending] = await Promise.all(
    ["latest", "pending"].map((tag) => provider.send("eth_getBlockByNumber", [tag, false]).then(time, () => null)),
  );
  if (latest === null && pending === null) return null;
  return Math.max(latest ?? 0, pending ?? 0);
}

/** One network as the pages need it: to sign for its agents and to add it to a wallet (with its table's public RPC). */
async function dashboardNetwork(s: Services) {
  const { config } = s.ctx;
  const known = networkOfChainId(config.chainId);
  return {
    name: config.networkName,
    chainId: config.chainId,
    chainIdHex: `0x${config.chainId.toString(16)}`,
    chainName: config.embeddedChain
      ? `SpendGate sandbox of ${known?.displayName ?? config.networkName} (chain id ${config.chainId})`
      : (known?.displayName ?? `Chain ${config.chainId}`),
    // Only an embedded chain's RPC is shown: in production the service's RPC may be a private endpoint with a key in it.
    rpcUrl: config.embeddedChain ? config.rpcUrl : (known?.publicRpcUrl ?? null),
    explorerUrl: explorerBase(s.ctx),
    usdcAddress: config.usdcAddress,
    nativeCurrency: known?.nativeCurrency ?? { name: "Ether", symbol: "ETH", decimals: 18 },
    chainTime: await latestChainTime(s.ctx.chain.provider),
  };
}

const securityHeaders = (ctx: AppContext) => {
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.set("X-Frame-Options", "DENY");
};

/** Paths the REST API also serves (GET /approvals...): documented there, the page is only what a browser gets. */
const API_PATHS = new Set(["/", "/approvals", "/ledger", "/webhooks"]);

const PAGE_OPERATIONS = PAGES.map((page) =>
  rawOperation({
    method: "GET",
    path: page.path,
    tag: "Dashboard",
    summary: `Owner dashboard page ${page.path}`,
    auth: "none",
    input: z.object({}),
    hidden: API_PATHS.has(page.path),
    responses: { 200: html("the page"), 503: html("the dashboard bundle could not be built") },
    errors: [],
    serve: async ({ ctx, deps: { s } }, next) => {
      // /, /approvals and /ledger are REST endpoints too: only a browser's navigation (HTML first, no key) gets the page.
      if (ctx.get("Authorization") || ctx.accepts("json", "html") !== "html") {
        await next();
        return;
      }
      ctx.vary("Accept");
      securityHeaders(ctx);
      ctx.set("Cache-Control", "no-store");
      ctx.type = "text/html; charset=utf-8";
      try {
        ctx.set("Content-Security-Policy", PAGE_CSP);
        ctx.body = renderPage(page, await dashboardBundle());
      } catch (err) {
        s.ctx.logger.error({ err }, "dashboard build failed");
        ctx.status = 503;
        ctx.body = renderBuildError();
      }
    },
  }),
);

export const DASHBOARD_OPERATIONS = [
  ...PAGE_OPERATIONS,
  rawOperation({
    method: "GET",
    path: `${ASSET_PREFIX}:name`,
    tag: "Dashboard",
    summary: "The dashboard's bundled scripts and styles",
    auth: "none",
    input: z.object({ params: z.object({ name: z.string().meta({ description: "asset file name" }) }) }),
    responses: { 200: { description: "the asset", contentType: "application/octet-stream" } },
    errors: ["not_found"],
    serve: async ({ ctx, input }) => {
      const asset = (await dashboardBundle()).assets.get(input.params.name);
      if (!asset) throw notFound(`No dashboard asset ${input.params.name}.`);
      securityHeaders(ctx);
      ctx.set("Cache-Control", "public, max-age=31536000, immutable");
      ctx.type = asset.type;
      ctx.body = asset.body;
    },
  }),
  operation({
    method: "GET",
    path: "/dashboard/config",
    tag: "Dashboard",
    summary: "What the pages need before sign-in: chain, URLs, USDC, signature window",
    auth: "none",
    input: z.object({}),
    responses: { 200: { description: "the page config", schema: DashboardConfigResponse } },
    errors: [],
    handle: async ({ deps: { s, networks } }) => {
      const { config } = s.ctx;
      const all = await Promise.all(networks.all.map((n) => dashboardNetwork(n)));
      const { name: _name, nativeCurrency: _native, ...first } = all[0];
      return reply(
        200,
        {
          mode: config.embeddedChain ? "embedded" : "production",
          networks: all,
          ...first,
          baseUrl: s.ctx.urls.base,
          signatureWindowSeconds: config.signatureWindowSeconds,
          serverTime: Math.floor(Date.now() / 1000),
        } as const,
        { "Cache-Control": "no-store" },
      );
    },
  }),
  // Public: the onboarding page shows the agent before its owner has signed in. No keys, no email.
  operation({
    method: "GET",
    path: "/agents/:address",
    tag: "Dashboard",
    summary: "An agent's public summary (the activation page shows it before sign-in)",
    auth: "none",
    input: z.object({
      params: z.object({ address: z.string().meta({ description: "the agent's address" }) }),
      query: z.object({
        code: z
          .string()
          .optional()
          .catch(undefined)
          .meta({ description: "the activation code of the agent's link: with it, ownerAddress is shown" }),
      }),
    }),
    responses: { 200: json("the agent", AgentPublic) },
    errors: ["not_found"],
    handle: async ({ input, principal: p, deps: { s, networks } }) => {
      const address = Address.safeParse(input.params.address);
      const agent = address.success ? await s.ctx.store.agents.findOne({ address: address.data }) : null;
      if (!agent) throw notFound(`No agent with address ${input.params.address}. Check the activation link your agent gave you.`);
      // Who owns an agent is told only to who holds its activation code (or a key that may act for it).
      const entitled =
        s.agents.isActivationCode(agent.address, input.query.code ?? "") ||
        (p?.role === "agent" && p.agentAddress === agent.address) ||
        (p?.role === "owner" && p.ownerAddress === agent.ownerAddress);
      // The agent's network: the chain its owner signs for and its contract lives on.
      const on = networks.of(agent);
      return reply(200, {
        ...agentView(agent, networks.whereOf(agent), await on.ctx.chain.isDeployed(agent.policyAddress)),
        ownerAddress: entitled ? agent.ownerAddress : null,
      });
    },
  }),
];
