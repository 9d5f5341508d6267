/** The owner dashboard's JSON endpoints (its pages are HTML). */
import { z } from "zod";
import { AgentSummary } from "./accounts";

/** One network the service runs, as a page needs it to sign for its agents (and to add it to a wallet). */
export const DashboardNetwork = z
  .object({
    name: z.string().meta({ description: "the network's name (an agent's `network`)" }),
    chainId: z.number().int(),
    chainIdHex: z.string(),
    chainName: z.string(),
    rpcUrl: z
      .string()
      .nullable()
      .meta({ description: "for wallet_addEthereumChain: the embedded chain's RPC, or the network's public RPC; never the service's own" }),
    explorerUrl: z.string(),
    usdcAddress: z.string(),
    nativeCurrency: z.object({ name: z.string(), symbol: z.string(), decimals: z.number().int() }),
    chainTime: z.number().int().nullable().meta({ description: "this chain's latest block time (see chainTime)" }),
  })
  .meta({ id: "DashboardNetwork" });

export const DashboardConfigResponse = z
  .object({
    mode: z.enum(["embedded", "production"]),
    networks: z
      .array(DashboardNetwork)
      .meta({ description: "every network the service runs, the first (an agent's default) first; the chain fields here are its" }),
    // The first network's chain fields, as before several networks (chainId, chainIdHex, chainName, rpcUrl, ...).
    ...DashboardNetwork.omit({ name: true, nativeCurrency: true, chainTime: true }).shape,
    baseUrl: z.string(),
    signatureWindowSeconds: z.number().int(),
    serverTime: z
      .number()
      .int()
      .meta({ description: "the server's clock (Unix seconds), for information: pages never date signatures by it" }),
    chainTime: z.number().int().nullable().meta({
      description:
        "the (first) chain's latest block time (Unix seconds; the later of the latest and the pending block), null when the chain does not answer: pages date owner signatures max(browser clock, chainTime) and warn when the two differ by more than a minute",
    }),
  })
  .meta({ id: "DashboardConfig" });

/** The same fields as an agent in GET /wallet/agents: nothing secret, shown before sign-in. */
export const AgentPublic = AgentSummary.meta({ id: "AgentPublic" });
