/** One CongoDB server (memory storage) for a cluster of SpendGate processes; prints `MONGODB_URI=...`, stops on a signal. */
import { startEmbeddedMongo } from "../../src/dev/embeddedStore";
import { exitOnSignal } from "../exitOnSignal";

async function main(): Promise<void> {
  const mongo = await startEmbeddedMongo();
  console.log(`MONGODB_URI=${mongo.uri}`);
  exitOnSignal(() => mongo.stop());
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
