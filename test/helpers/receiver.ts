/**
 * A real webhook receiver for tests: a node:http server on 127.0.0.1 that records every request (raw body and
 * headers) and every connection, and answers each request as the test scripted it (default 200).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type Reply = number | "hang";

export interface ReceivedRequest {
  /** Path and query the request was sent to. */
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: { id: string; type: string; createdAt: string; data: Record<string, any> };
  at: number;
  answered: Reply;
}

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** TCP connections accepted so far. */
  connections: number;
  /** Replies for the next requests, in order (then 200). */
  script(...replies: Reply[]): void;
  /** Resolves once `predicate` holds for the received requests (checked at every request), or fails after `ms`. */
  until(predicate: (requests: ReceivedRequest[]) => boolean, ms?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const queue: Reply[] = [];
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const reply = queue.shift() ?? 200;
      requests.push({ path: req.url ?? "", headers: req.headers, raw, body: JSON.parse(raw), at: Date.now(), answered: reply });
      for (const w of waiters) w();
      if (reply === "hang") {
        hanging.add(res);
        return;
      }
      // A redirect points at another path of this receiver: a client that followed it would show up there.
      const location = reply >= 300 && reply < 400 ? { Location: "/redirected" } : {};
      res.writeHead(reply, { "Content-Type": "text/plain", ...location }).end(reply < 300 ? "ok" : "no");
    });
  });
  server.on("connection", (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/hooks`,
    requests,
    get connections() {
      return connections;
    },
    script: (...replies) => queue.push(...replies),
    until: (predicate, ms = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(requests)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(requests);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `receiver: condition not met within ${ms} ms (${requests.length} requests: ${requests.map((r) => r.body.type).join(", ")})`,
            ),
          );
        }, ms);
        waiters.add(check);
        check();
      }),
    close: async () => {
      for (const res of hanging) res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}
