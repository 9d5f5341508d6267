/** The owner dashboard's JSON endpoints (its pages are HTML). */
import { z } from "zod";
import { AgentSummary } from "./accounts";

export const DashboardConfigResponse = z
  .object({
    mode: z.enum(["embedded", "production"]),
    chainId: z.number().int(),
    chainIdHex: z.string(),
    chainName: z.string(),
    rpcUrl: z
      .string()
      .nullable()
      .meta({ description: "for wallet_addEthereumChain: the embedded chain's RPC, or the chain's public RPC; never RPC_URL" }),
    explorerUrl: z.string(),
    baseUrl: z.string(),
    usdcAddress: z.string(),
    signatureWindowSeconds: z.number().int(),
    serverTime: z
      .number()
      .int()
      .meta({ description: "the server's clock (Unix seconds), for information: pages never date signatures by it" }),
    chainTime: z.number().int().nullable().meta({
      description:
        "the chain's latest block time (Unix seconds; the later of the latest and the pending block), null when the chain does not answer: pages date owner signatures max(browser clock, chainTime) and warn when the two differ by more than a minute",
    }),
  })
  .meta({ id: "DashboardConfig" });

/** The same fields as an agent in GET /wallet/agents: nothing secret, shown before sign-in. */
export const AgentPublic = AgentSummary.meta({ id: "AgentPublic" });
