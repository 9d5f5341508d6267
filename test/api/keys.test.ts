import { expect } from "chai";
import { ownerKey } from "../helpers/owner";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";

describe("key revocation and what anonymous callers learn", () => {
  const { s } = stackPerFile();

  it("an owner revokes a leaked agent key and issues a new one (shown once); the old key answers 401 at once", async () => {
    const owner = randomOwner();
    const a = await s.onboard(owner);
    const key = await ownerKey(s, owner);
    expectErrorShape(await s.api("POST", `/agents/${a.agentAddress}/key`, { key: a.apiKey }), 403, "forbidden");
    const other = await ownerKey(s, randomOwner());
    expectErrorShape(await s.api("POST", `/agents/${a.agentAddress}/key`, { key: other }), 403, "forbidden");
    const res = await s.api("POST", `/agents/${a.agentAddress}/key`, { key });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({ agentAddress: a.agentAddress, revoked: 1 });
    expect(res.body.apiKey).to.match(/^sk_[0-9a-f]{64}$/);
    expectErrorShape(await s.api("GET", "/limits", { key: a.apiKey }), 401, "unauthorized");
    expect((await s.api("GET", "/limits", { key: res.body.apiKey })).status).to.equal(200);
  });

  it("an owner revokes its own owner keys (sign out everywhere)", async () => {
    const owner = randomOwner();
    const [k1, k2] = [await ownerKey(s, owner), await ownerKey(s, owner)];
    const res = await s.api("POST", "/auth/keys/revoke", { key: k1 });
    expect(res.body).to.deep.equal({ ownerAddress: owner.address, revoked: 2 });
    for (const k of [k1, k2]) expectErrorShape(await s.api("GET", "/wallet/agents", { key: k }), 401, "unauthorized");
  });

  it("anonymous genesis does not reveal an existing agent's address, and the public agent view hides the owner without the code", async () => {
    const body = { email: "leak@example.com", label: "leaky" };
    const first = await s.api("POST", "/wallet/genesis", { body });
    expect(first.status).to.equal(201);
    const again = await s.api("POST", "/wallet/genesis", { body });
    expectErrorShape(again, 409, "conflict");
    expect(JSON.stringify(again.body)).to.not.include(first.body.agentAddress.slice(2).toLowerCase());
    expect(JSON.stringify(again.body).toLowerCase()).to.not.include(first.body.agentAddress.slice(2).toLowerCase());

    const owner = randomOwner();
    const a = await s.onboard(owner);
    const anonymous = await s.api("GET", `/agents/${a.agentAddress}`, { headers: { Accept: "application/json" } });
    expect(anonymous.status).to.equal(200);
    expect(anonymous.body.ownerAddress).to.equal(null);
    const code = new URL(s.activationPath(a.agentAddress), "http://x").searchParams.get("code");
    const withCode = await s.api("GET", `/agents/${a.agentAddress}?code=${code}`, { headers: { Accept: "application/json" } });
    expect(withCode.body.ownerAddress).to.equal(owner.address);
  });
});
