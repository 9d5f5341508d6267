/**
 * Listen: the app on its port (Node's parser errors and CONNECT answered in the error shape), the public URLs filled
 * in from the bound address, and the stop that drains the requests in flight.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { createApp } from "../app";
import { errorBody, unavailable } from "../errors";
import { answerClientErrors, answerConnect } from "../http/transport";
import type { Booted } from "./boot";
import type { Wired } from "./wiring";

/** A request that arrives while the service stops: 503, and the connection is closed after it. */
function refuseWhileStopping(_req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify(errorBody(unavailable("SpendGate is shutting down: retry in a moment.")));
  res.writeHead(503, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    "Retry-After": "5",
    Connection: "close",
  });
  res.end(body);
}

export async function listen({ config, networks }: Booted, wired: Wired, logger: Logger): Promise<{ server: Server; url: string }> {
  const faucets = new Map(networks.flatMap((n) => (n.faucet ? [[n.name, n.faucet] as const] : [])));
  const app = createApp({
    services: wired.services,
    networks: wired.networks,
    logger,
    webhooks: wired.webhooks.service,
    faucets: faucets.size ? faucets : undefined,
    demoSellers: networks[0].demoSellers,
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once("error", reject);
  });
  server.requestTimeout = 120_000;
  answerClientErrors(server);
  answerConnect(server);
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  wired.urls.base = config.baseUrl ?? url;
  wired.urls.dashboard = config.dashboardUrl ?? wired.urls.base;
  return { server, url };
}

/**
 * No new connections (the port is free at once) and a 503 for new requests on open ones; waits for the requests in
 * flight up to `drainMs`, then closes every connection.
 */
export async function stopListening(server: Server, drainMs: number): Promise<void> {
  // Requests already running keep their handler; a new one on a kept-alive connection is refused.
  server.removeAllListeners("request");
  server.on("request", refuseWhileStopping);
  const drained = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const bound = Number.isFinite(drainMs) ? new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs))) : drained;
  await Promise.race([drained, bound]);
  clearTimeout(timer);
  server.closeAllConnections();
}
