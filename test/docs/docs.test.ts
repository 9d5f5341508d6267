import { expect } from "chai";
import Koa from "koa";
import Ajv2020 from "ajv/dist/2020";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { registeredRoutes, type RegisteredRoute } from "../../src/docs/routes";
import { OPERATIONS } from "../../src/http/operations";
import { openApiPath } from "../../src/api/operation";
import { documented } from "../../src/docs/openapi";
import { BLOCK_REASONS, ERROR_CODES } from "../../src/docs/errors";
import { REASON_TABLE } from "../../src/chain/reasons";
import { SET_POLICY_TYPES, APPROVAL_DECISION_TYPES, LINK_AGENT_TYPES, SET_PAUSED_TYPES } from "../../src/chain/typedData";

describe("API reference and OpenAPI: generated, complete, valid", () => {
  let s: Stack;
  let app: Koa;
  let openapi: any;
  let markdown: string;
  let live: RegisteredRoute[];

  before(async () => {
    // Capture the app startService really listens with (not a copy built here), to read its routers.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be put back, and called with apply(this)
    const listen = Koa.prototype.listen;
    Koa.prototype.listen = function (this: Koa, ...args: unknown[]) {
      // eslint-disable-next-line @typescript-eslint/no-this-alias -- capturing the app being listened on is the point
      app = this;
      return (listen as (...a: unknown[]) => ReturnType<Koa["listen"]>).apply(this, args);
    } as Koa["listen"];
    try {
      s = await startStack();
    } finally {
      Koa.prototype.listen = listen;
    }
    live = registeredRoutes(app);
    openapi = (await s.api("GET", "/openapi.json")).body;
    markdown = (await s.api("GET", "/references/api_docs.md")).body;
  });
  after(async () => s?.close());

  it("finds the app's routes (the walk works)", () => {
    expect(live.length).to.be.greaterThan(20);
    expect(live).to.deep.include({ method: "POST", path: "/pay" });
    expect(live).to.deep.include({ method: "POST", path: "/mcp" });
  });

  it("documents every route the app registers, in /openapi.json and in /references/api_docs.md", () => {
    const missing = live.filter((r) => !openapi.paths[openApiPath(r.path)]?.[r.method.toLowerCase()]);
    expect(missing, "declare these routes as operations (src/http/routes)").to.deep.equal([]);
    const notInMarkdown = live.filter((r) => !markdown.includes(`### \`${r.method} ${r.path}\``));
    expect(notInMarkdown).to.deep.equal([]);
  });

  it("documents no route the app does not serve", () => {
    const served = new Set(live.map((r) => `${r.method} ${r.path}`));
    expect(
      documented(OPERATIONS)
        .filter((r) => !served.has(`${r.method} ${r.path}`))
        .map((r) => `${r.method} ${r.path}`),
    ).to.deep.equal([]);
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    const { Validator } = await import("@seriousme/openapi-schema-validator");
    const validator = new Validator();
    const res = await validator.validate(openapi);
    expect(res.errors ?? [], JSON.stringify(res.errors, null, 1)).to.deep.equal([]);
    expect(res.valid).to.equal(true);
    expect(validator.version).to.equal("3.1");
    expect(openapi.servers[0].url).to.equal(s.url);
  });

  it("lists every error code of the catalogue (src/errors.ts), with its status, in both documents", () => {
    // Codes are a typed union (ErrorCode): what the code can answer is the catalogue, which test/util/errorCatalogue checks.
    for (const [code, { status }] of Object.entries(ERROR_CODES)) expect(markdown, code).to.include(`| \`${code}\` | ${status} |`);
    const inOpenApi = new Set(
      Object.values(openapi.paths).flatMap((ops: any) => Object.values(ops).flatMap((op: any) => op["x-error-codes"])),
    );
    for (const code of Object.keys(ERROR_CODES)) expect(inOpenApi.has(code) || ["headers_too_large"].includes(code), code).to.equal(true);
    for (const { name } of REASON_TABLE) expect(BLOCK_REASONS).to.have.property(name);
  });

  it("shows every field of every schema, the MCP tools and the EIP-712 types", () => {
    for (const [name, schema] of Object.entries<any>(openapi.components.schemas)) {
      expect(markdown, name).to.include(`### ${name}`);
      for (const field of Object.keys(schema.properties ?? {}))
        expect(markdown, `${name}.${field}`).to.match(new RegExp(`\`(\\S+\\.)?${field}\``));
    }
    for (const tool of ["get_limits", "verify_merchant", "pay", "get_balance", "list_transactions", "get_payment"]) {
      expect(markdown).to.include(`### ${tool}`);
    }
    for (const types of [SET_POLICY_TYPES, APPROVAL_DECISION_TYPES, LINK_AGENT_TYPES, SET_PAUSED_TYPES]) {
      const [name, fields] = Object.entries(types)[0];
      expect(markdown).to.include(`${name}(${fields.map((f) => `${f.type} ${f.name}`).join(",")})`);
    }
  });

  it("describes what the service really answers: live responses validate against the documented schemas", async () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ $id: "https://spendgate.local/openapi.json", components: openapi.components });
    const seen: string[] = [];
    const check = (method: string, path: string, status: number, body: unknown) => {
      const op = openapi.paths[path][method.toLowerCase()];
      const schema = op.responses[String(status)]?.content?.["application/json"]?.schema;
      expect(schema, `${method} ${path} ${status} is not documented`).to.exist;
      seen.push(`${method} ${path} ${status}`);
      const absolute = JSON.parse(JSON.stringify(schema).replaceAll('"#/components', '"https://spendgate.local/openapi.json#/components'));
      const validate = ajv.compile(absolute);
      expect(validate(body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).to.equal(true);
    };
    const owner = randomOwner();
    const agent = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    const key = agent.apiKey;
    const calls: [string, string, string, Record<string, unknown>?][] = [
      ["GET", "/health", "/health"],
      ["GET", "/limits", `/limits?address=${agent.agentAddress}`, { key }],
      ["GET", "/wallet/balance", `/wallet/balance?address=${agent.agentAddress}`, { key }],
      ["GET", "/wallet/agents", "/wallet/agents", { key }],
      ["GET", "/ledger", "/ledger", { key }],
      ["GET", "/ledger/{id}", "/ledger/txn_000000000000000000000000", { key }],
      ["POST", "/wallet/genesis", "/wallet/genesis", { body: { email: "docs@example.com", label: "docs test agent" } }],
      ["POST", "/wallet/genesis", "/wallet/genesis", { body: { email: "docs@example.com", label: "docs test agent" } }],
      ["POST", "/auth/siwe/nonce", "/auth/siwe/nonce", { body: { address: owner.address } }],
      [
        "POST",
        "/pay",
        "/pay",
        { key, body: { agentAddress: agent.agentAddress, serviceUrl: "http://localhost:1/x", maxAmount: "1", intent: "not allowed" } },
      ],
      ["POST", "/dev/faucet", "/dev/faucet", { body: { agentAddress: agent.agentAddress, amount: "3" } }],
      ["GET", "/sell/agent-intel", "/sell/agent-intel"],
      ["GET", "/approvals", "/approvals", { key }],
      ["DELETE", "/mcp", "/mcp"],
    ];
    for (const [method, documented, actual, opts] of calls) {
      const res = await s.api(method, actual, opts);
      check(method, documented, res.status, res.body);
    }
    // the answers above cover success, refusal and error bodies
    expect(seen).to.include.members([
      "POST /wallet/genesis 201",
      "POST /wallet/genesis 409",
      "POST /pay 422",
      "GET /ledger/{id} 404",
      "GET /sell/agent-intel 402",
      "GET /approvals 403",
      "DELETE /mcp 405",
    ]);
  });

  it("serves /skill.md with this deployment's URLs and the onboarding steps", async () => {
    const res = await s.api("GET", "/skill.md");
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.match(/^text\/markdown/);
    for (const needle of [
      `${s.url}/mcp`,
      `${s.url}/wallet/genesis`,
      `${s.url}/onboarding?agent=<agentAddress>`,
      "~/.spendgate/config.json",
      '"type": "http"',
      "X-Agent-Address",
      "get_limits",
      "verify_merchant",
      "Never retry a blocked payment",
      "Never approve your own payments",
    ]) {
      expect(res.body).to.include(needle);
    }
  });
});
