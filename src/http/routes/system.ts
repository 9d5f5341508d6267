/** Health: the store and the chain both answer. */
import { z } from "zod";
import { HealthResponse } from "../../schemas/system";
import { json, operation, reply } from "../operation";

export const SYSTEM_OPERATIONS = [
  operation({
    method: "GET",
    path: "/health",
    tag: "System",
    summary: "Health: the store and the chain answer",
    auth: "none",
    input: z.object({}),
    responses: { 200: json("healthy", HealthResponse), 503: json("degraded: the store or the chain does not answer", HealthResponse) },
    errors: [],
    handle: async ({ deps: { s } }) => {
      const [store, chain] = await Promise.allSettled([
        s.ctx.store.ping(),
        Promise.all([s.ctx.chain.provider.send("eth_chainId", []), s.ctx.chain.provider.getBlockNumber()]),
      ]);
      const chainOk = chain.status === "fulfilled" && Number(chain.value[0]) === s.ctx.config.chainId;
      const ok = store.status === "fulfilled" && chainOk;
      const body = {
        status: ok ? "ok" : "degraded",
        mode: s.ctx.config.embeddedChain ? "embedded" : "production",
        store: store.status === "fulfilled" ? "ok" : "unreachable",
        chain: chainOk ? "ok" : "unreachable",
        chainId: s.ctx.config.chainId,
        blockNumber: chain.status === "fulfilled" ? chain.value[1] : null,
        factory: s.ctx.config.factoryAddress ?? null,
        usdc: s.ctx.config.usdcAddress,
      } as const;
      return ok ? reply(200, body) : reply(503, body);
    },
  }),
];
