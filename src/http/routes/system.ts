/** Health: the store and the chain both answer. */
import Router from "@koa/router";
import type { Services } from "../../services";
import type { AppState } from "../types";

export function systemRoutes(s: Services): Router<AppState> {
  const router = new Router<AppState>();
  router.get("/health", async (ctx) => {
    const [store, chain] = await Promise.allSettled([
      s.ctx.store.ping(),
      Promise.all([s.ctx.chain.provider.send("eth_chainId", []), s.ctx.chain.provider.getBlockNumber()]),
    ]);
    const chainOk = chain.status === "fulfilled" && Number(chain.value[0]) === s.ctx.config.chainId;
    const ok = store.status === "fulfilled" && chainOk;
    ctx.status = ok ? 200 : 503;
    ctx.body = {
      status: ok ? "ok" : "degraded",
      mode: s.ctx.config.embeddedChain ? "embedded" : "production",
      store: store.status === "fulfilled" ? "ok" : "unreachable",
      chain: chainOk ? "ok" : "unreachable",
      chainId: s.ctx.config.chainId,
      blockNumber: chain.status === "fulfilled" ? chain.value[1] : null,
      factory: s.ctx.config.factoryAddress ?? null,
      usdc: s.ctx.config.usdcAddress,
    };
  });
  return router;
}
