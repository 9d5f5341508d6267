/**
 * The embedded store with SpendGate's index layer (src/dev/congoIndexes.ts) and a plain CongoDB server side by side,
 * for tests that run the same operations on both over the wire and compare the answers. `p` and `q` are collection "t"
 * on each (two database names: CongoDB caches index definitions per "db.collection" across servers in one process).
 */
import { createServer } from "node:net";
import { MongoClient, type Collection } from "mongodb";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";

export interface CongoPair {
  patched: EmbeddedMongo;
  /** The patched server's client, then the plain one's. */
  clients: MongoClient[];
  p: Collection;
  q: Collection;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const addr = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return typeof addr === "object" && addr ? addr.port : 0;
}

export async function startCongoPair(db: string): Promise<CongoPair> {
  const patched = await startEmbeddedMongo();
  const { congodb } = await import("@push.rocks/smartmongo");
  const port = await freePort();
  const plain = new congodb.CongoServer({ host: "127.0.0.1", port, storage: "memory" });
  await plain.start();
  const clients = [
    new MongoClient(patched.uri, { serverMonitoringMode: "poll" }),
    new MongoClient(`mongodb://127.0.0.1:${port}`, { serverMonitoringMode: "poll" }),
  ];
  await Promise.all(clients.map((c) => c.connect()));
  const [p, q] = clients.map((c, i) => c.db(i === 0 ? db : `${db}_scan`).collection("t"));
  return {
    patched,
    clients,
    p,
    q,
    close: async () => {
      await Promise.all(clients.map((c) => c.close()));
      await plain.stop();
      await patched.stop();
    },
  };
}
