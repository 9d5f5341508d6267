/** The embedded MongoDB-compatible server (CongoDB, in memory) used when MONGODB_URI is unset. */
import { createServer } from "node:net";
import { installEmbeddedIndexes, type EmbeddedIndexes } from "./congoIndexes";
import { installSharedMingoOptions } from "./congoMingo";

export interface EmbeddedMongo {
  uri: string;
  /** The hash indexes that let CongoDB answer indexed queries without scanning (congoIndexes.ts). */
  indexes: EmbeddedIndexes;
  stop(): Promise<void>;
}

async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts CongoDB on 127.0.0.1 (memory storage: nothing persists). Its dependencies print debug lines; muted here. */
export async function startEmbeddedMongo(host = "127.0.0.1"): Promise<EmbeddedMongo> {
  const port = await freePort(host);
  const originalLog = console.log;
  console.log = (...args: unknown[]) => {
    if (typeof args[0] === "string" && args[0].startsWith("__# debug")) return;
    originalLog(...args);
  };
  const { congodb } = await import("@push.rocks/smartmongo");
  installSharedMingoOptions(congodb);
  const server = new congodb.CongoServer({ host, port, storage: "memory" });
  const indexes = installEmbeddedIndexes(server);
  await server.start();
  return {
    uri: `mongodb://${host}:${port}`,
    indexes,
    stop: async () => {
      await server.stop();
    },
  };
}
