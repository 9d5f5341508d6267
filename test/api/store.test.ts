import { expect } from "chai";
import { stackPerFile } from "../helpers/stack";

describe("store connection under steady traffic", () => {
  const { s } = stackPerFile();

  it("keeps the connection pool through 2.5 s of concurrent requests: no pool clears, no 500s", async () => {
    // With the driver's streaming monitor, CongoDB failed every awaitable hello ("Server ended moreToCome
    // unexpectedly"): the pool was cleared about once a second and writes caught in that window answered 500.
    const events: string[] = [];
    s.svc.store.client.on("connectionPoolCleared", () => events.push("connectionPoolCleared"));
    s.svc.store.client.on("serverHeartbeatFailed", (e) => events.push(`serverHeartbeatFailed: ${e.failure.message}`));
    const statuses: number[] = [];
    const end = Date.now() + 2_500;
    let i = 0;
    while (Date.now() < end) {
      const batch = await Promise.all([
        ...Array.from({ length: 4 }, () => s.api("POST", "/wallet/genesis", { body: { label: `steady-${i++}` } })),
        s.api("GET", "/health"),
      ]);
      statuses.push(...batch.map((r) => r.status));
    }
    expect(statuses.length).to.be.greaterThan(20);
    expect(
      statuses.filter((x) => x >= 500),
      "5xx answers",
    ).to.deep.equal([]);
    expect(events).to.deep.equal([]);
  });
});
