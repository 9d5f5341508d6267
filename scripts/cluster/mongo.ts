/** One CongoDB server (memory storage) for a cluster of SpendGate processes; prints `MONGODB_URI=...`, stops on a signal. */
import { startEmbeddedMongo } from "../../src/store/embedded";

async function main(): Promise<void> {
  const mongo = await startEmbeddedMongo();
  console.log(`MONGODB_URI=${mongo.uri}`);
  const stop = () => {
    mongo.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
