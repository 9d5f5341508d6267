/** `npm run onboard -- …` and the repository's `bin/spendgate.cjs`: the onboard CLI of the SDK (packages/sdk). */
import { main } from "../packages/sdk/src/onboard";

export * from "../packages/sdk/src/onboard";

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
