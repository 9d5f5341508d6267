import { expect } from "chai";
import { hashKey } from "../../src/services/keys";
import { createDecipheriv, createHash, randomBytes } from "node:crypto";
import { Wallet } from "ethers";
import { randomOwner, startStack, type ApiResponse, type Stack } from "../helpers/stack";
import { siweVerify } from "../helpers/owner";
import { allDocuments } from "../helpers/store";

// A known encryption key, so the test can decrypt the stored agent keys itself and then look for them in clear.
const WALLET_ENCRYPTION_KEY = randomBytes(32).toString("hex");

/** Every (path, value) of a document: field names and string leaves. */
function* leaves(value: unknown, path = ""): Generator<{ path: string; key: string; value: unknown }> {
  if (value && typeof value === "object" && !(value instanceof Date) && value.constructor?.name !== "ObjectId") {
    for (const [k, v] of Object.entries(value)) {
      yield { path: `${path}.${k}`, key: k, value: v };
      yield* leaves(v, `${path}.${k}`);
    }
  }
}

/** Decrypts a walletKeys document the way the design describes it (AES-256-GCM, address as AAD), independently. */
function decryptAgentKey(doc: { address: string; ciphertext: string; iv: string; tag: string }): string {
  const d = createDecipheriv("aes-256-gcm", Buffer.from(WALLET_ENCRYPTION_KEY, "hex"), Buffer.from(doc.iv, "base64"));
  d.setAAD(Buffer.from(doc.address.toLowerCase()));
  d.setAuthTag(Buffer.from(doc.tag, "base64"));
  return "0x" + Buffer.concat([d.update(Buffer.from(doc.ciphertext, "base64")), d.final()]).toString("hex");
}

/** The forms a 32-byte secret could leak in: hex with and without 0x, either case, base64 and base64url. */
function forms(hexKey: string): string[] {
  const hex = hexKey.replace(/^0x/, "").toLowerCase();
  const raw = Buffer.from(hex, "hex");
  return [hex, hex.toUpperCase(), raw.toString("base64"), raw.toString("base64url")];
}

describe("secrets: private keys and API keys never appear in clear in responses, logs or the store", () => {
  let s: Stack;
  const responses: { label: string; text: string }[] = [];
  const issuedKeys: { key: string; issuedBy: string }[] = [];

  async function call(label: string, method: string, path: string, opts: Parameters<Stack["api"]>[2] = {}): Promise<ApiResponse> {
    const res = await s.api(method, path, opts);
    const lines: string[] = [];
    res.headers.forEach((v, k) => lines.push(`${k}: ${v}`));
    const headers = lines.join("\n");
    responses.push({ label, text: `${headers}\n${typeof res.body === "string" ? res.body : JSON.stringify(res.body)}` });
    return res;
  }

  before(async () => {
    s = await startStack({ WALLET_ENCRYPTION_KEY });
    // The full flow: genesis, SIWE, link, limits (deploy and update), balance, agents, plus refusals.
    const owner = randomOwner();
    const g1 = await call("genesis 1", "POST", "/wallet/genesis", { body: { email: "secret@example.com", label: "secret-bot" } });
    const g2 = await call("genesis 2", "POST", "/wallet/genesis", { body: { label: "second" } });
    expect([g1.status, g2.status]).to.deep.equal([201, 201]);
    issuedKeys.push({ key: g1.body.apiKey, issuedBy: "genesis 1" }, { key: g2.body.apiKey, issuedBy: "genesis 2" });
    const agent = g1.body.agentAddress as string;
    const key = g1.body.apiKey as string;

    await call("genesis again", "POST", "/wallet/genesis", { body: { email: "secret@example.com", label: "secret-bot" } });
    const signIn = await siweVerify(s, owner);
    responses.push({ label: "siwe", text: JSON.stringify(signIn.body) });
    expect(signIn.status).to.equal(200);
    issuedKeys.push({ key: signIn.body.apiKey, issuedBy: "siwe" });
    const ownerApiKey = signIn.body.apiKey as string;

    expect((await call("link", "POST", "/agents/link", { body: await s.signLink(owner, agent) })).status).to.equal(200);
    const policy = { perTxLimit: "1", dailyBudget: "5", allowlist: ["api.example.com"], approvalThreshold: "1" };
    expect((await call("limits", "POST", "/limits", { key, body: await s.policyBody(owner, agent, policy) })).status).to.equal(201);
    const update = await s.policyBody(owner, agent, { ...policy, dailyBudget: "6" }, s.now() + 1);
    expect((await call("limits update", "POST", "/limits", { key: ownerApiKey, body: update })).status).to.equal(201);
    await call("limits replay", "POST", "/limits", { key, body: update });
    await call("balance", "GET", `/wallet/balance?address=${agent}`, { key });
    await call("agents", "GET", "/wallet/agents", { key: ownerApiKey });
    await call("limits read", "GET", "/limits", { key: ownerApiKey });
    await call("health", "GET", "/health");
    // Keys where they do not belong: in a query, in an unknown body field, in invalid JSON, in a bad header.
    await call("key in query", "GET", `/limits?apiKey=${key}`, { key });
    await call("key in body", "POST", "/wallet/genesis", { body: { label: "x", apiKey: key } });
    await call("key in bad JSON", "POST", "/agents/link", { body: `{"agentAddress": "${key}", ` });
    await call("key in text body", "POST", "/limits", { key, body: key, headers: { "Content-Type": "text/plain" } });
    await call("malformed auth", "GET", "/limits", { headers: { Authorization: `Token ${key}` } });
    await call("agent key as bearer of another's data", "GET", `/wallet/balance?address=${g2.body.agentAddress}`, { key });
  });
  after(async () => s?.close());

  /** The agents' private keys, decrypted from the store and checked against their addresses. */
  async function agentPrivateKeys(): Promise<string[]> {
    const docs = await s.svc.store.walletKeys.find({}).toArray();
    expect(docs.length).to.be.greaterThan(1);
    return docs.map((doc) => {
      const pk = decryptAgentKey(doc);
      expect(new Wallet(pk).address, "the ciphertext is the agent's key, encrypted").to.equal(doc.address);
      return pk;
    });
  }

  /** Every secret the service holds, in every form it could leak in. */
  async function secrets(): Promise<{ name: string; value: string }[]> {
    const out: { name: string; value: string }[] = [];
    for (const pk of await agentPrivateKeys())
      for (const f of forms(pk)) out.push({ name: `agent private key ${pk.slice(0, 6)}…`, value: f });
    const cfg = s.svc.config;
    for (const [name, pk] of [
      ["operator private key", cfg.operatorPrivateKey],
      ["facilitator private key", cfg.facilitatorPrivateKey],
      ["wallet encryption key", WALLET_ENCRYPTION_KEY],
    ] as const) {
      for (const f of forms(pk!)) out.push({ name, value: f });
    }
    for (const { key } of issuedKeys) {
      out.push({ name: `API key ${key.slice(0, 9)}…`, value: key });
      out.push({ name: `API key ${key.slice(0, 9)}… (hex part)`, value: key.slice(3) });
    }
    return out;
  }

  it("stores every agent key encrypted: ciphertext, iv and tag only, and no field that holds a key", async () => {
    const docs = await s.svc.store.walletKeys.find({}).toArray();
    const agents = await s.svc.store.agents.countDocuments();
    expect(docs).to.have.length(agents);
    for (const doc of docs) {
      expect(Object.keys(doc).sort()).to.deep.equal(["_id", "address", "ciphertext", "createdAt", "iv", "provider", "tag"]);
      expect(Buffer.from(doc.ciphertext, "base64")).to.have.length(32);
      expect(Buffer.from(doc.iv, "base64")).to.have.length(12);
      expect(Buffer.from(doc.tag, "base64")).to.have.length(16);
    }
    const pks = await agentPrivateKeys();
    for (const [i, doc] of docs.entries()) {
      expect(Buffer.from(doc.ciphertext, "base64").toString("hex")).to.not.equal(pks[i].slice(2));
    }
  });

  it("keeps no secret in clear in any document of any collection", async () => {
    const all = await allDocuments(s.svc.store.db);
    expect(all.length).to.be.greaterThan(5);
    const text = all.map(({ collection, doc }) => `${collection} ${JSON.stringify(doc)}`);
    for (const secret of await secrets()) {
      const hit = text.find((t) => t.includes(secret.value));
      expect(hit, `${secret.name} found in the store: ${hit?.slice(0, 200)}`).to.equal(undefined);
    }
  });

  it("stores API keys only as HMACs under the server's secret (no plain SHA-256) and short prefixes, in no field named like a secret", async () => {
    const all = await allDocuments(s.svc.store.db);
    const hashes = new Set((await s.svc.store.apiKeys.find({}).toArray()).map((d) => d.hash));
    for (const { key } of issuedKeys) {
      expect(hashes.has(hashKey(key, s.svc.config.walletEncryptionKey))).to.equal(true);
      // A hash anyone could compute from a key would let a database write make one that works.
      expect(hashes.has(createHash("sha256").update(key).digest("hex"))).to.equal(false);
    }
    for (const { collection, doc } of all) {
      for (const { path, key, value } of leaves(doc)) {
        expect(key, `${collection}${path}`).to.not.match(/^(private_?key|secret|api_?key|mnemonic|seed|password)$/i);
        // A key prefix may be kept to tell keys apart ("sk_" and 6 hex digits), never more of the key.
        if (typeof value === "string") expect(value, `${collection}${path}`).to.not.match(/sk_[0-9a-f]{7,}/);
      }
    }
    expect(await s.svc.store.apiKeys.countDocuments()).to.equal(issuedKeys.length);
  });

  it("holds no 32-byte hex value anywhere in the store that is the private key of an agent, operator or facilitator", async () => {
    // Whatever the field (hashes, roots, tx hashes, ids, event data), no value may be a key: derive an address from
    // every candidate and compare it with the addresses whose keys the service holds.
    const custody = new Set((await s.svc.store.walletKeys.find({}).toArray()).map((d) => d.address));
    for (const pk of [s.svc.config.operatorPrivateKey, s.svc.config.facilitatorPrivateKey!]) custody.add(new Wallet(pk).address);
    let candidates = 0;
    const leaked: string[] = [];
    for (const { collection, doc } of await allDocuments(s.svc.store.db)) {
      for (const { path, value } of leaves(doc)) {
        if (typeof value !== "string") continue;
        for (const m of value.matchAll(/(?:0x)?([0-9a-fA-F]{64})(?![0-9a-fA-F])/g)) {
          candidates++;
          let address: string | null = null;
          try {
            address = new Wallet("0x" + m[1]).address;
          } catch {
            continue; // not a valid secp256k1 scalar, so not a key
          }
          if (custody.has(address)) leaked.push(`${collection}${path}`);
          if (m[1].toLowerCase() === WALLET_ENCRYPTION_KEY) leaked.push(`${collection}${path} (encryption key)`);
        }
      }
    }
    expect(candidates, "the scan saw the hashes, roots and tx hashes").to.be.greaterThan(5);
    expect(leaked).to.deep.equal([]);
  });

  it("writes no secret to the logs", async () => {
    expect(s.logs.length, "the flow was logged").to.be.greaterThan(10);
    const logs = s.logs.join("");
    for (const secret of await secrets()) {
      expect(logs.includes(secret.value), `${secret.name} found in the logs`).to.equal(false);
    }
    expect(logs).to.not.match(/sk_[0-9a-f]{16}/);
  });

  it("returns each API key once, in the response that created it, and never again", () => {
    for (const { key, issuedBy } of issuedKeys) {
      const seenIn = responses.filter((r) => r.text.includes(key.slice(3))).map((r) => r.label);
      expect(seenIn, `API key ${key.slice(0, 9)}…`).to.deep.equal([issuedBy]);
    }
  });

  it("never returns a private key or the encryption key in any response", async () => {
    const nonKeys = (await secrets()).filter((x) => !x.name.startsWith("API key"));
    for (const r of responses) {
      for (const secret of nonKeys) {
        expect(r.text.includes(secret.value), `${secret.name} in the response to ${r.label}`).to.equal(false);
      }
    }
  });
});
