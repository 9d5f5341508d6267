/** Responses of the system routes and of SpendGate's own x402 seller route (documented, not validated). */
import { z } from "zod";

/** One network of the service, as the health routes see it. */
export const NetworkHealth = z
  .object({
    name: z.string().meta({ description: "the network (a name of the network table)" }),
    chainId: z.number().int(),
    chain: z.enum(["ok", "unreachable"]).meta({ description: "its JSON-RPC answered its block number, on its chain id" }),
    blockNumber: z.number().int().nullable(),
    factory: z.string(),
    usdc: z.string(),
  })
  .meta({ id: "NetworkHealth" });

export const HealthResponse = z
  .object({
    status: z.enum(["ok", "degraded"]),
    mode: z.enum(["embedded", "production"]),
    store: z.enum(["ok", "unreachable"]),
    chain: z.enum(["ok", "unreachable"]).meta({ description: "every network's chain answers (each one: `networks`)" }),
    networks: z.array(NetworkHealth).meta({ description: "every network the service runs, the first (an agent's default) first" }),
    chainId: z.number().int().meta({ description: "the first network's (and blockNumber, factory, usdc)" }),
    blockNumber: z.number().int().nullable(),
    factory: z.string().nullable(),
    usdc: z.string(),
    version: z.string().meta({ description: "the service's version (package.json)" }),
    commit: z.string().optional().meta({ description: "the build's git commit (GIT_COMMIT, or the source tree's); absent when unknown" }),
  })
  .meta({ id: "HealthResponse" });

export const LiveResponse = z
  .object({
    status: z.literal("ok"),
    version: z.string(),
    commit: z.string().optional(),
    uptimeSeconds: z.number().int(),
  })
  .meta({ id: "LiveResponse" });

const Check = z.enum(["ok", "unreachable", "behind"]);

/** What GET /health/ready checked; also the `details` of its 503. */
export const ReadyChecks = z
  .object({
    store: Check.meta({ description: "the store answered a ping" }),
    chain: Check.meta({ description: "every network's JSON-RPC answered its block number, on its chain id" }),
    indexer: Check.meta({
      description: "every network's indexer is at most READY_MAX_INDEXER_LAG blocks behind its chain (ok when not checked)",
    }),
    blockNumber: z.number().int().nullable().meta({ description: "the first network's" }),
    indexerLag: z.number().int().nullable().meta({ description: "blocks the indexer furthest behind has still to read" }),
    maxIndexerLag: z.number().int().meta({ description: "READY_MAX_INDEXER_LAG (0: not checked)" }),
  })
  .meta({ id: "ReadyChecks" });
export type ReadyChecks = z.infer<typeof ReadyChecks>;

export const ReadyResponse = ReadyChecks.extend({ status: z.literal("ready") }).meta({ id: "ReadyResponse" });

const RequirementV1 = z.object({
  scheme: z.literal("exact"),
  network: z.string().meta({ description: "x402 v1 network name, e.g. base" }),
  maxAmountRequired: z.string().meta({ description: "price in USDC base units (6 decimals)" }),
  resource: z.string(),
  description: z.string(),
  mimeType: z.string(),
  outputSchema: z.object({}),
  payTo: z.string(),
  maxTimeoutSeconds: z.number().int(),
  asset: z.string().meta({ description: "the USDC contract" }),
  extra: z.object({ name: z.string(), version: z.string() }).meta({ description: "the token's EIP-712 domain name and version" }),
});

export const PaymentChallenge = z
  .object({
    x402Version: z.literal(1),
    error: z.string().meta({ description: "why payment is required, or why the payment was refused (x402 reason)" }),
    message: z.string().optional(),
    accepts: z.array(RequirementV1),
    extensions: z
      .object({
        "offer-receipt": z.object({
          info: z.object({
            offers: z.array(
              z.object({
                format: z.literal("eip712"),
                acceptIndex: z.number().int().optional(),
                payload: z.record(z.string(), z.unknown()),
                signature: z.string(),
              }),
            ),
          }),
        }),
      })
      .optional()
      .meta({
        description:
          "x402 offer-receipt: an EIP-712 offer of each requirement, signed by the seller's own key (docs/receipts.md); the same in the v2 header",
      }),
  })
  .meta({ id: "PaymentChallenge", description: "x402 v1 402 body; the v2 requirement is in the PAYMENT-REQUIRED header" });

export const AgentIntel = z
  .object({
    agent: z.object({ address: z.string(), network: z.string(), chainId: z.number().int() }),
    portfolio: z.object({
      totalValueUsd: z.string().nullable(),
      tokens: z.array(
        z.object({ symbol: z.string(), address: z.string().optional(), balance: z.string(), valueUsd: z.string().optional() }),
      ),
      error: z.string().optional(),
    }),
    payment: z.object({
      status: z.literal("settled"),
      txHash: z.string(),
      network: z.string(),
      token: z.literal("USDC"),
      amount: z.string(),
      payer: z.string(),
      explorer: z.string(),
    }),
  })
  .meta({ id: "AgentIntel" });

/** The MCP endpoint speaks JSON-RPC 2.0 (documented in the API reference). */
export const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z.union([z.string(), z.number().int()]).optional(),
    method: z.string().meta({ description: "initialize, tools/list, tools/call, notifications/initialized, ..." }),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: "JsonRpcMessage", description: "an MCP JSON-RPC 2.0 request or notification (or a batch of them)" });

export const JsonRpcResponse = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z.union([z.string(), z.number().int(), z.null()]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .meta({ id: "JsonRpcResponse" });
