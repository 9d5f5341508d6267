import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { siweMessage, siweNonce, siweVerify } from "../helpers/owner";
import { expectErrorShape } from "../helpers/store";

describe("owner sign-in with SIWE (EIP-4361)", () => {
  const { s } = stackPerFile();

  it("issues a one-time nonce for an address", async () => {
    const owner = randomOwner();
    const res = await s.api("POST", "/auth/siwe/nonce", { body: { address: owner.address } });
    expect(res.status).to.equal(200);
    expect(res.body.nonce).to.match(/^[a-zA-Z0-9]{8,}$/);
    const other = await siweNonce(s, owner.address);
    expect(other).to.not.equal(res.body.nonce);
  });

  it("answers an owner key, the owner's address and the key's expiry for a signed message", async () => {
    const owner = randomOwner();
    const before = Date.now();
    const res = await siweVerify(s, owner);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.apiKey).to.match(/^sk_[0-9a-f]{64}$/);
    expect(res.body.ownerAddress).to.equal(owner.address);
    const expiresAt = new Date(res.body.expiresAt);
    expect(expiresAt.toISOString()).to.equal(res.body.expiresAt);
    expect(expiresAt.getTime()).to.be.greaterThan(before);

    // The key works as an owner key (no agents yet) and is stored as an owner key for that address.
    const agents = await s.api("GET", "/wallet/agents", { key: res.body.apiKey });
    expect(agents.status).to.equal(200);
    expect(agents.body.agents).to.deep.equal([]);
    const keyDoc = await s.svc.store.apiKeys.findOne({ ownerAddress: owner.address });
    expect(keyDoc?.role).to.equal("owner");
  });

  it("accepts a lower-case address in the nonce request", async () => {
    const owner = randomOwner();
    const nonce = await siweNonce(s, owner.address.toLowerCase());
    const res = await siweVerify(s, owner, { nonce });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });

  it("refuses to reuse a nonce, even with a freshly signed message", async () => {
    const owner = randomOwner();
    const first = await siweVerify(s, owner);
    expect(first.status).to.equal(200);
    const nonce = /Nonce: (\w+)/.exec(first.message)![1];

    const replay = await s.api("POST", "/auth/siwe/verify", { body: { message: first.message, signature: first.signature } });
    expectErrorShape(replay, 401);
    const resigned = await siweVerify(s, owner, { nonce });
    expectErrorShape(resigned, 401);
    expect(await s.svc.store.apiKeys.countDocuments({ ownerAddress: owner.address })).to.equal(1);
  });

  it("refuses 10 concurrent verifications of one message but one", async () => {
    const owner = randomOwner();
    const nonce = await siweNonce(s, owner.address);
    const message = siweMessage(s, owner.address, nonce);
    const signature = await owner.signMessage(message);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => s.api("POST", "/auth/siwe/verify", { body: { message, signature } })),
    );
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, ...Array(9).fill(401)]);
    expect(await s.svc.store.apiKeys.countDocuments({ ownerAddress: owner.address })).to.equal(1);
  });

  it("refuses a nonce issued for another address", async () => {
    const owner = randomOwner();
    const nonce = await siweNonce(s, randomOwner().address);
    expectErrorShape(await siweVerify(s, owner, { nonce }), 401);
  });

  it("refuses a nonce the service never issued", async () => {
    const owner = randomOwner();
    expectErrorShape(await siweVerify(s, owner, { nonce: "a1b2c3d4e5f6a7b8" }), 401);
  });

  it("refuses a message for another domain", async () => {
    const owner = randomOwner();
    const res = await siweVerify(s, owner, { domain: "evil.example.com", uri: "https://evil.example.com" });
    expectErrorShape(res, 401);
    expect(await s.svc.store.apiKeys.countDocuments({ ownerAddress: owner.address })).to.equal(0);
  });

  it("refuses a message with the right domain but another URI", async () => {
    const owner = randomOwner();
    expectErrorShape(await siweVerify(s, owner, { uri: "https://evil.example.com" }), 401);
  });

  it("refuses a message for another chain", async () => {
    const owner = randomOwner();
    expectErrorShape(await siweVerify(s, owner, { chainId: 1 }), 401);
  });

  it("refuses an expired message", async () => {
    const owner = randomOwner();
    expectErrorShape(await siweVerify(s, owner, { expirationTime: new Date(Date.now() - 60_000) }), 401);
  });

  it("refuses a message signed by someone other than the address in it, and keeps the nonce usable", async () => {
    const owner = randomOwner();
    const nonce = await siweNonce(s, owner.address);
    const forged = await siweVerify(s, owner, { nonce, signer: randomOwner() });
    expectErrorShape(forged, 401);
    expect(await s.svc.store.apiKeys.countDocuments({ ownerAddress: owner.address })).to.equal(0);
    // The real owner can still use the nonce: a forger cannot burn it.
    expect((await siweVerify(s, owner, { nonce })).status).to.equal(200);
  });

  it("answers 4xx, not 500, for a message whose address has a broken EIP-55 checksum", async () => {
    const owner = randomOwner();
    const nonce = await siweNonce(s, owner.address);
    const good = siweMessage(s, owner.address, nonce);
    // Flip the case of one letter of the address: still 40 hex digits, no longer a valid checksum.
    const hex = owner.address.slice(2);
    const i = hex.search(/[a-fA-F]/);
    const flipped = hex[i] === hex[i].toLowerCase() ? hex[i].toUpperCase() : hex[i].toLowerCase();
    const broken = `0x${hex.slice(0, i)}${flipped}${hex.slice(i + 1)}`;
    const message = good.replace(owner.address, broken);
    const res = await s.api("POST", "/auth/siwe/verify", { body: { message, signature: await owner.signMessage(message) } });
    expectErrorShape(res, 400, "bad_request");
  });

  it("answers 400 for text that is not a SIWE message", async () => {
    const owner = randomOwner();
    const message = "hello, please give me a key";
    const res = await s.api("POST", "/auth/siwe/verify", { body: { message, signature: await owner.signMessage(message) } });
    expectErrorShape(res, 400, "bad_request");
  });
});
