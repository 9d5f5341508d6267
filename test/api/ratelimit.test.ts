import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { startStack, type Stack } from "../helpers/stack";

describe("rate limits: requests per key and failed authentications per address", () => {
  let s: Stack;
  before(async () => {
    s = await startStack({ AUTH_FAILURES_PER_MINUTE: "3", RATE_LIMIT_PER_MINUTE: "40" });
  });
  after(async () => s?.close());

  it("answers 429 with Retry-After once an address has failed authentication too often, but never to a valid key", async () => {
    const agent = await s.genesis({ email: "limits@example.com", label: "limited" });
    const bad = () => s.api("GET", "/wallet/agents", { key: `sk_${randomBytes(32).toString("hex")}` });
    for (let i = 0; i < 3; i++) expect((await bad()).status).to.equal(401);
    const limited = await bad();
    expect(limited.status).to.equal(429);
    expect(limited.body).to.include({ error: "rate_limited", status: 429 });
    expect(Number(limited.headers.get("retry-after"))).to.be.within(1, 60);
    // Guesses from a shared address must not lock its real users out (issue 10 item 11).
    expect((await s.api("GET", "/wallet/agents", { key: agent.apiKey })).status).to.equal(200);
    expect((await s.api("GET", "/health")).status).to.equal(200); // unkeyed requests are not locked out
  });

  it("anonymous agents with the same label and no email do not collide", async () => {
    const a = await s.api("POST", "/wallet/genesis", { body: { label: "bot" } });
    const b = await s.api("POST", "/wallet/genesis", { body: { label: "bot" } });
    expect([a.status, b.status]).to.deep.equal([201, 201]);
    expect(a.body.agentAddress).to.not.equal(b.body.agentAddress);
  });

  it("answers 429 past RATE_LIMIT_PER_MINUTE requests from one client, and never limits /health", async () => {
    let last = 0;
    for (let i = 0; i < 45 && last !== 429; i++) last = (await s.api("GET", "/openapi.json")).status;
    expect(last).to.equal(429);
    expect((await s.api("GET", "/health")).status).to.equal(200); // load balancers probe it
  });
});
