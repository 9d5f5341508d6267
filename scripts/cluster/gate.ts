/**
 * A TCP gate in front of the chain's or the store's port (chaos.ts): close() is that process dying as its clients see
 * it (open connections reset, new ones refused), open() is it back on the same address with its state, as a node or a
 * MongoDB server restarted on its data directory comes back. (The embedded chain and CongoDB keep their state in
 * memory only, so their own processes cannot be restarted without starting from nothing.)
 */
import { type Server, type Socket, connect, createServer } from "node:net";
import type { AddressInfo } from "node:net";

export interface Gate {
  port: number;
  isOpen(): boolean;
  open(): Promise<void>;
  close(): Promise<void>;
}

export async function startGate(targetHost: string, targetPort: number): Promise<Gate> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => s.destroy());
  };
  const open = async () => {
    if (server) return;
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
    port = (s.address() as AddressInfo).port;
    server = s;
  };
  await open();
  return {
    port,
    isOpen: () => server !== null,
    open,
    close: async () => {
      const s = server;
      server = null;
      for (const sock of sockets) sock.destroy();
      if (s) await new Promise<void>((r) => s.close(() => r()));
    },
  };
}
