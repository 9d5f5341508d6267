/** The body of the embedded store's worker thread (startEmbeddedMongoThread in embeddedStoreThread.ts starts it). */
import { serveFromThread } from "../util/workerThread";
import { startEmbeddedMongo } from "./embeddedStore";

// The index layer (congoIndexes.ts) patches the server instance, so startEmbeddedMongo installs it here, in the thread
// that owns the server.
serveFromThread(async (host: string) => {
  const mongo = await startEmbeddedMongo(host);
  return { info: mongo.uri, close: () => mongo.stop() };
});
