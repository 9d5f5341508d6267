/**
 * A TCP pass-through in front of a dependency (the store's or the chain's port): stop() makes the dependency
 * unreachable from the service (open connections cut, nothing listening), start() brings it back on the same port.
 * The dependency itself keeps running and keeps its state, as a network partition or a restart behind a stable
 * address would look to the service.
 */
import { type Server, type Socket, connect, createServer } from "node:net";

export interface TcpProxy {
  /** host:port the service connects to. */
  host: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => s.destroy());
  };
  const start = async () => {
    const s = createServer((client) => {
      const upstream = connect(targetPort, targetHost);
      track(client);
      track(upstream);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => resolve());
    });
    port = (s.address() as { port: number }).port;
    server = s;
  };
  await start();
  return {
    host: "127.0.0.1",
    port,
    start,
    stop: async () => {
      const s = server;
      server = null;
      for (const sock of sockets) sock.destroy();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
