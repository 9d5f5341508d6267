/**
 * One owner's endpoints cannot hold up every other owner's alerts: an owner whose receiver never answers (hostile or
 * just down) keeps only a few of the delivery worker's slots busy, and another owner's approval.requested still goes
 * out at once.
 */
import { expect } from "chai";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { startReceiver, type Receiver } from "../helpers/receiver";

describe("webhook deliveries are shared fairly between owners", () => {
  let s: Stack;
  let slow: Receiver;
  let fast: Receiver;

  before(async () => {
    // Attempts that hang hold their slot for the whole time limit: longer than this test.
    s = await startStack({ WEBHOOK_TIMEOUT_MS: "60000", WEBHOOK_POLL_MS: "50" });
    slow = await startReceiver();
    fast = await startReceiver();
  });
  after(async () => {
    await slow?.close();
    await fast?.close();
    await s?.close();
  });

  const register = async (key: string, url: string) => {
    const res = await s.api("POST", "/webhooks", { key, body: { url, events: ["agent.paused"] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { id: string };
  };

  it("delivers to an owner at once while another owner's receiver hangs on a dozen deliveries", async () => {
    const hostileKey = await ownerKey(s, randomOwner());
    const hanging = await register(hostileKey, slow.url);
    slow.script(...Array<"hang">(12).fill("hang"));
    for (let i = 0; i < 12; i++) expect((await s.api("POST", `/webhooks/${hanging.id}/test`, { key: hostileKey })).status).to.equal(202);
    await slow.until((r) => r.length >= 1);

    const ownerApiKey = await ownerKey(s, randomOwner());
    const ep = await register(ownerApiKey, fast.url);
    const sent = await s.api("POST", `/webhooks/${ep.id}/test`, { key: ownerApiKey });
    expect(sent.status).to.equal(202);
    // Without a fair share this waits for the hanging attempts' 60 s time limit.
    const got = await fast.until((r) => r.some((x) => x.body.id === sent.body.eventId), 5_000);
    expect(got).to.have.length(1);
  });
});
