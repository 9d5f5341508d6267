import { expect } from "chai";
import { stackPerFile, randomOwner, type ApiResponse } from "../helpers/stack";
import { siweMessage, siweNonce } from "../helpers/owner";
import { documentCounts, expectErrorShape } from "../helpers/store";

interface Case {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  key?: "agent" | "owner";
  headers?: Record<string, string>;
  status: number;
}

const BAD_AMOUNTS: unknown[] = [
  "-1",
  "1e5",
  "0.0000001",
  "",
  " ",
  "abc",
  "1,5",
  "01",
  "+1",
  "0x10",
  "Infinity",
  "NaN",
  "1.",
  ".5",
  "1.5 USDC",
  "79228162514264337593543.950336",
  "99999999999999999999999999999",
  5,
  0.5,
  null,
  true,
  [],
  {},
];
const BAD_ADDRESSES: unknown[] = [
  "",
  " ",
  "0x",
  "0x123",
  "0x" + "zz".repeat(20),
  "11".repeat(20),
  "0x" + "a".repeat(41),
  "0x" + "a".repeat(39),
  "0xAbCdEf0123456789abcdef0123456789ABCDEF01", // mixed case with a wrong EIP-55 checksum
  "vitalik.eth",
  123,
  null,
  ["0x" + "11".repeat(20)],
  { address: "0x" + "11".repeat(20) },
];
const BAD_TIMESTAMPS: unknown[] = ["1700000000", 1.5, -1, 2 ** 41, null, "", [], Number.MAX_VALUE];
const BAD_SIGNATURES: unknown[] = ["", "0x", "zz", "0x" + "gg".repeat(65), "0x" + "11".repeat(10), "0x" + "11".repeat(5000), 123, null];

describe("bad input on every endpoint: 4xx in the error shape, never 500, nothing stored", () => {
  const { s } = stackPerFile({ RATE_LIMIT_PER_MINUTE: "1000000" });
  let agentKey: string;
  let ownerKeyValue: string;
  let limitsBody: Record<string, unknown>;
  let linkBody: Record<string, unknown>;
  let verifyBody: Record<string, unknown>;
  let agentAddress: string;

  before(async () => {
    // Hundreds of anonymous calls from one address in a minute: lift the rate limit for this file only.
    const owner = randomOwner();
    const linked = await s.genesis();
    agentAddress = linked.agentAddress;
    agentKey = linked.apiKey;
    expect((await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress) })).status).to.equal(200);
    // Fully valid, signed bodies: each case below breaks exactly one thing.
    limitsBody = await s.policyBody(owner, agentAddress, {
      perTxLimit: "1",
      dailyBudget: "5",
      allowlist: ["api.example.com"],
      approvalThreshold: "1",
    });
    const unlinked = await s.genesis();
    linkBody = await s.signLink(owner, unlinked.agentAddress);
    const nonce = await siweNonce(s, owner.address);
    const message = siweMessage(s, owner.address, nonce);
    verifyBody = { message, signature: await owner.signMessage(message) };
    const signIn = await siweNonce(s, owner.address).then(async (n) => {
      const m = siweMessage(s, owner.address, n);
      return s.api("POST", "/auth/siwe/verify", { body: { message: m, signature: await owner.signMessage(m) } });
    });
    ownerKeyValue = signIn.body.apiKey;
  });

  async function call(c: Case): Promise<ApiResponse> {
    const key = c.key === "agent" ? agentKey : c.key === "owner" ? ownerKeyValue : undefined;
    return s.api(c.method, c.path, { key, body: c.body, headers: c.headers });
  }

  /** Runs every case; each must answer its status in the error shape and leave every collection's count as it was. */
  async function expectRefused(cases: Case[]): Promise<void> {
    const failures: string[] = [];
    for (const c of cases) {
      const before = await documentCounts(s.svc.store.db);
      const res = await call(c);
      const after = await documentCounts(s.svc.store.db);
      try {
        expectErrorShape(res, c.status);
        expect(after, "store changed").to.deep.equal(before);
      } catch (err) {
        failures.push(`${c.name}: ${(err as Error).message}`);
      }
    }
    expect(failures, failures.join("\n")).to.deep.equal([]);
  }

  /** One case per field: each bad value, the field missing, and the field's name misspelt. */
  function fieldCases(
    endpoint: Omit<Case, "name" | "status" | "body">,
    valid: Record<string, unknown>,
    bad: Record<string, unknown[]>,
    optional: string[] = [],
  ): Case[] {
    const cases: Case[] = [];
    for (const [field, values] of Object.entries(bad)) {
      for (const value of values) {
        cases.push({
          ...endpoint,
          name: `${endpoint.path} ${field}=${JSON.stringify(value)?.slice(0, 40)}`,
          body: { ...valid, [field]: value },
          status: 400,
        });
      }
    }
    for (const field of Object.keys(valid)) {
      if (optional.includes(field)) continue;
      const { [field]: _dropped, ...rest } = valid;
      cases.push({ ...endpoint, name: `${endpoint.path} without ${field}`, body: rest, status: 400 });
    }
    cases.push({ ...endpoint, name: `${endpoint.path} with an unknown field`, body: { ...valid, isAdmin: true }, status: 400 });
    return cases;
  }

  it("POST /limits: bad amounts, addresses, allowlists, signatures, timestamps, missing and unknown fields (400)", async () => {
    await expectRefused(
      fieldCases({ method: "POST", path: "/limits", key: "agent" }, limitsBody, {
        perTxLimit: BAD_AMOUNTS,
        dailyBudget: BAD_AMOUNTS,
        approvalThreshold: BAD_AMOUNTS,
        agentAddress: BAD_ADDRESSES,
        allowlist: ["api.example.com", [1], [null], [{}], ["x".repeat(301)], Array(501).fill("a.example.com"), null, {}],
        humanSignature: BAD_SIGNATURES,
        timestamp: BAD_TIMESTAMPS,
      }),
    );
  });

  it("POST /agents/link: bad addresses, signatures, timestamps, missing and unknown fields (400)", async () => {
    await expectRefused(
      fieldCases(
        { method: "POST", path: "/agents/link" },
        linkBody,
        {
          agentAddress: BAD_ADDRESSES,
          ownerAddress: BAD_ADDRESSES,
          ownerSignature: BAD_SIGNATURES,
          timestamp: BAD_TIMESTAMPS,
          activationCode: ["", "short", "has space in it ok", 42, null],
        },
        ["activationCode"],
      ),
    );
  });

  it("POST /wallet/genesis: bad email and label, unknown fields (400)", async () => {
    const bad = ["", " ", "not-an-email", "a@", "@b.com", `${"a".repeat(250)}@example.com`, 5, null, ["a@b.com"], {}];
    const labels = ["", " ", "x".repeat(101), 5, null, true, ["bot"], { name: "bot" }];
    const cases: Case[] = [
      ...bad.map((email) => ({
        name: `email=${JSON.stringify(email)?.slice(0, 30)}`,
        method: "POST",
        path: "/wallet/genesis",
        body: { email, label: "x" },
        status: 400,
      })),
      ...labels.map((label) => ({
        name: `label=${JSON.stringify(label)?.slice(0, 30)}`,
        method: "POST",
        path: "/wallet/genesis",
        body: { label },
        status: 400,
      })),
      {
        name: "genesis unknown field",
        method: "POST",
        path: "/wallet/genesis",
        body: { label: "x", privateKey: "0x" + "11".repeat(32) },
        status: 400,
      },
    ];
    await expectRefused(cases);
  });

  it("POST /auth/siwe/nonce and /auth/siwe/verify: bad fields, missing and unknown fields (400)", async () => {
    const owner = randomOwner();
    await expectRefused([
      ...fieldCases({ method: "POST", path: "/auth/siwe/nonce" }, { address: owner.address }, { address: BAD_ADDRESSES }),
      ...fieldCases({ method: "POST", path: "/auth/siwe/verify" }, verifyBody, {
        message: ["", 5, null, ["a"], "x".repeat(5000)],
        signature: BAD_SIGNATURES,
      }),
    ]);
  });

  it("GET /wallet/balance and GET /limits: malformed, repeated and unknown query parameters (400)", async () => {
    const q = (path: string, key: "agent" | "owner" = "agent"): Case => ({ name: path, method: "GET", path, key, status: 400 });
    await expectRefused([
      q("/wallet/balance"),
      q("/wallet/balance?address="),
      q("/wallet/balance?address=0x123"),
      q(`/wallet/balance?address=${agentAddress.slice(2)}`),
      q(`/wallet/balance?address=${agentAddress}&address=${agentAddress}`),
      q(`/wallet/balance?address=${agentAddress}&extra=1`),
      q(`/wallet/balance?address[]=${agentAddress}`),
      q("/limits?address=0xnothex", "owner"),
      q("/limits?address=", "owner"),
      q(`/limits?address=${agentAddress}&address=${agentAddress}`),
      q("/limits?limit=10"),
    ]);
  });

  const postEndpoints = () => [
    { path: "/wallet/genesis", key: undefined },
    { path: "/agents/link", key: undefined },
    { path: "/auth/siwe/nonce", key: undefined },
    { path: "/auth/siwe/verify", key: undefined },
    { path: "/limits", key: "agent" as const },
  ];

  it("answers 415 for bodies that are not JSON (text/plain, form, no type)", async () => {
    const cases: Case[] = [];
    for (const { path, key } of postEndpoints()) {
      const json = JSON.stringify(path === "/limits" ? limitsBody : { label: "x" });
      cases.push({
        name: `${path} text/plain`,
        method: "POST",
        path,
        key,
        body: json,
        headers: { "Content-Type": "text/plain" },
        status: 415,
      });
      cases.push({
        name: `${path} form`,
        method: "POST",
        path,
        key,
        body: "label=x",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        status: 415,
      });
      cases.push({
        name: `${path} xml`,
        method: "POST",
        path,
        key,
        body: "<label>x</label>",
        headers: { "Content-Type": "application/xml" },
        status: 415,
      });
    }
    await expectRefused(cases);
    // A body with no Content-Type at all (bytes, so fetch adds none).
    for (const { path, key } of postEndpoints()) {
      const before = await documentCounts(s.svc.store.db);
      const headers: Record<string, string> = key ? { Authorization: `Bearer ${agentKey}` } : {};
      const res = await fetch(s.url + path, { method: "POST", headers, body: new TextEncoder().encode('{"label":"x"}') });
      expect(res.headers.get("content-type")).to.match(/application\/json/);
      expectErrorShape({ status: res.status, body: await res.json(), headers: res.headers }, 415, "unsupported_media_type");
      expect(await documentCounts(s.svc.store.db)).to.deep.equal(before);
    }
  });

  it("answers 400 for invalid JSON and for JSON that is not an object", async () => {
    const cases: Case[] = [];
    for (const { path, key } of postEndpoints()) {
      for (const raw of ["{", '{"label": "x",}', "{'label': 'x'}", "nul", '"label"', "42", "null", "true", "[]", '[{"label":"x"}]']) {
        cases.push({ name: `${path} body ${raw}`, method: "POST", path, key, body: raw, status: 400 });
      }
      if (path !== "/wallet/genesis") cases.push({ name: `${path} {}`, method: "POST", path, key, body: "{}", status: 400 });
      cases.push({
        name: `${path} __proto__`,
        method: "POST",
        path,
        key,
        body: '{"__proto__": {"isAdmin": true}, "label": "x"}',
        status: 400,
      });
    }
    await expectRefused(cases);
  });

  it("answers 413 for bodies over 64 kB", async () => {
    const cases: Case[] = [];
    for (const { path, key } of postEndpoints()) {
      cases.push({ name: `${path} 70 kB`, method: "POST", path, key, body: { label: "x".repeat(70_000) }, status: 413 });
      cases.push({ name: `${path} 2 MB`, method: "POST", path, key, body: JSON.stringify({ filler: "y".repeat(2_000_000) }), status: 413 });
    }
    await expectRefused(cases);
  });

  it("answers 404 not_found for unknown routes", async () => {
    await expectRefused([
      { name: "GET /nope", method: "GET", path: "/nope", status: 404 },
      { name: "POST /nope", method: "POST", path: "/nope", body: {}, status: 404 },
      { name: "GET /wallet", method: "GET", path: "/wallet", key: "agent", status: 404 },
      { name: "GET /limits/x", method: "GET", path: "/limits/extra", key: "agent", status: 404 },
      { name: "GET /v1/limits", method: "GET", path: "/v1/limits", key: "agent", status: 404 },
    ]);
  });

  it("answers 405 in the error shape for a known path with the wrong method", async () => {
    await expectRefused([
      { name: "GET /wallet/genesis", method: "GET", path: "/wallet/genesis", status: 405 },
      { name: "DELETE /limits", method: "DELETE", path: "/limits", key: "agent", status: 405 },
      { name: "PUT /agents/link", method: "PUT", path: "/agents/link", body: linkBody, status: 405 },
      { name: "POST /health", method: "POST", path: "/health", body: {}, status: 405 },
      { name: "GET /auth/siwe/nonce", method: "GET", path: "/auth/siwe/nonce", status: 405 },
    ]);
  });

  it("still accepts the valid bodies the cases above were derived from", async () => {
    // Proves the cases failed for the broken field, not because the base body was already wrong.
    const link = await s.api("POST", "/agents/link", { body: linkBody });
    expect(link.status, JSON.stringify(link.body)).to.equal(200);
    const verify = await s.api("POST", "/auth/siwe/verify", { body: verifyBody });
    expect(verify.status, JSON.stringify(verify.body)).to.equal(200);
    const limits = await s.api("POST", "/limits", { key: agentKey, body: limitsBody });
    expect(limits.status, JSON.stringify(limits.body)).to.equal(201);
  });
});
