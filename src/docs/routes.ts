/** The routes a Koa app really serves, read from its @koa/router middleware (each `router.routes()` knows its router). */
import type Koa from "koa";
import type Router from "@koa/router";

export interface RegisteredRoute {
  method: string;
  path: string;
}

/** Method and path of every route of every router mounted on the app (HEAD, added for each GET, left out). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any app, whatever its state and context types
export function registeredRoutes(app: Koa<any, any>): RegisteredRoute[] {
  const out = new Map<string, RegisteredRoute>();
  for (const mw of app.middleware as ((...args: unknown[]) => unknown)[]) {
    const router = (mw as { router?: Router }).router;
    if (!router) continue;
    for (const layer of router.stack) {
      for (const method of layer.methods) {
        if (method === "HEAD") continue;
        const path = String(layer.path);
        out.set(`${method} ${path}`, { method, path });
      }
    }
  }
  return [...out.values()];
}
