/**
 * The embedded store (CongoDB with its index layer, src/dev/embeddedStore.ts) in its own worker thread, as `npm start` runs
 * it: the server's command handling (BSON, filters, the index layer) then runs on another core than the service's event
 * loop. The service reaches it over the MongoDB wire protocol on 127.0.0.1 either way; what is lost is the index
 * layer's explain and stats, which live in that thread (benches and tests that read them keep the store on their own).
 */
import { extname, join } from "node:path";
import type { Worker } from "node:worker_threads";
import { startInThread } from "../util/workerThread";

export interface EmbeddedMongoThread {
  uri: string;
  /** The store's thread: its 'exit' event follows stop(). */
  worker: Worker;
  stop(): Promise<void>;
}

/** Starts CongoDB on `host` in a worker thread (memory storage: nothing persists); stop() ends the thread. */
export async function startEmbeddedMongoThread(host = "127.0.0.1"): Promise<EmbeddedMongoThread> {
  const thread = await startInThread<string>(join(__dirname, `embeddedStoreWorker${extname(__filename)}`), host);
  return { uri: thread.info, worker: thread.worker, stop: () => thread.close() };
}
