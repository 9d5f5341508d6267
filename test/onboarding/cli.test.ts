import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { expect } from "chai";
import { startStack, type Stack } from "../helpers/stack";

const ROOT = join(__dirname, "../..");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command as a child process (asynchronously: the service answers from this process). */
function run(file: string, args: string[], home: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: ROOT, env: { ...process.env, HOME: home }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const spendgate = (args: string[], home: string) => run(process.execPath, [join(ROOT, "bin/spendgate.cjs"), ...args], home);

describe("npx spendgate onboard (the CLI as a child process, against the running service, in a temporary HOME)", () => {
  let s: Stack;
  const homes: string[] = [];
  const newHome = () => {
    const h = mkdtempSync(join(tmpdir(), "spendgate-home-"));
    homes.push(h);
    return h;
  };
  const configOf = (home: string) => join(home, ".spendgate", "config.json");

  before(async () => {
    s = await startStack();
  });
  after(async () => {
    await s?.close();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });

  it("creates the agent, writes the config (0600) and prints the activation link and the MCP configuration", async () => {
    const home = newHome();
    const r = await spendgate(["onboard", "--base-url", s.url, "--email", "owner@example.com", "--label", "research-bot"], home);
    expect(r.code, r.stderr).to.equal(0);
    const config = JSON.parse(readFileSync(configOf(home), "utf8"));
    expect(Object.keys(config)).to.deep.equal(["agentAddress", "apiKey", "label", "createdAt", "baseUrl"]);
    expect(config).to.include({ label: "research-bot", baseUrl: s.url });
    expect(config.apiKey).to.match(/^sk_[0-9a-f]{64}$/);
    expect(statSync(configOf(home)).mode & 0o777).to.equal(0o600);
    expect(statSync(join(home, ".spendgate")).mode & 0o777).to.equal(0o700);

    expect(r.stdout).to.include(`${s.url}/onboarding?agent=${config.agentAddress}`);
    expect(r.stdout.split(config.apiKey).length - 1, "the API key printed once").to.equal(1);
    const json = /\{\n\s+"mcpServers"[\s\S]*?\n\}/.exec(r.stdout)![0];
    expect(JSON.parse(json).mcpServers.spendgate).to.deep.equal({
      type: "http",
      url: `${s.url}/mcp`,
      headers: { Authorization: `Bearer ${config.apiKey}`, "X-Agent-Address": config.agentAddress },
    });
    const limits = await s.api("GET", `/limits?address=${config.agentAddress}`, { key: config.apiKey });
    expect(limits.status).to.equal(200);
    expect(limits.body.agents[0]).to.include({ address: config.agentAddress, deployed: false });
  });

  it("run again for the same service: checks the config with GET /limits and creates nothing", async () => {
    const home = newHome();
    expect((await spendgate(["onboard", "--base-url", s.url, "--label", "twice"], home)).code).to.equal(0);
    const before = readFileSync(configOf(home), "utf8");
    const count = await s.svc.store.agents.countDocuments();
    const r = await spendgate(["onboard", "--base-url", s.url, "--label", "twice"], home);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.include("Already onboarded").and.include("No spend policy yet");
    expect(readFileSync(configOf(home), "utf8")).to.equal(before);
    expect(await s.svc.store.agents.countDocuments()).to.equal(count);
  });

  it("never overwrites another agent's config without --force, and keeps a copy when forced", async () => {
    const home = newHome();
    mkdirSync(join(home, ".spendgate"), { mode: 0o700 });
    const other = {
      agentAddress: "0x1111111111111111111111111111111111111111",
      apiKey: `sk_${"1".repeat(64)}`,
      label: "other",
      createdAt: "2026-01-01T00:00:00.000Z",
      baseUrl: "https://spendgate.example",
    };
    writeFileSync(configOf(home), JSON.stringify(other), { mode: 0o600 });
    const refused = await spendgate(["onboard", "--base-url", s.url], home);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.include(other.agentAddress).and.include("--force");
    expect(JSON.parse(readFileSync(configOf(home), "utf8"))).to.deep.equal(other);

    // No baseUrl, and a key this service does not know: also another agent's.
    const { baseUrl: _b, ...bare } = other;
    writeFileSync(configOf(home), JSON.stringify(bare));
    const unknown = await spendgate(["onboard", "--base-url", s.url], home);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.include("401").and.include("--force");
    expect(JSON.parse(readFileSync(configOf(home), "utf8"))).to.deep.equal(bare);

    const forced = await spendgate(["onboard", "--base-url", s.url, "--label", "replacement", "--force"], home);
    expect(forced.code, forced.stderr).to.equal(0);
    expect(JSON.parse(readFileSync(configOf(home), "utf8"))).to.include({ label: "replacement", baseUrl: s.url });
    const backups = readdirSync(join(home, ".spendgate")).filter((f) => f.startsWith("config.json.bak-"));
    expect(backups).to.have.length(1);
    expect(JSON.parse(readFileSync(join(home, ".spendgate", backups[0]), "utf8"))).to.deep.equal(bare);
  });

  it("says clearly when the service is unreachable or answers 4xx, and writes nothing", async () => {
    const home = newHome();
    const closed = await new Promise<string>((resolve) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const { port } = srv.address() as AddressInfo;
        srv.close(() => resolve(`http://127.0.0.1:${port}`)); // a port nothing listens on any more
      });
    });
    const down = await spendgate(["onboard", "--base-url", closed], home);
    expect(down.code).to.equal(2);
    expect(down.stderr).to.include(`Cannot reach SpendGate at ${closed}`).and.include("ECONNREFUSED");

    await s.genesis({ email: "taken@example.com", label: "taken" });
    const conflict = await spendgate(["onboard", "--base-url", s.url, "--email", "taken@example.com", "--label", "taken"], home);
    expect(conflict.code).to.equal(1);
    expect(conflict.stderr).to.include("HTTP 409 conflict").and.include("exists already");
    expect(existsSync(configOf(home))).to.equal(false);

    const usage = await spendgate(["onboard", "--base-url", "ftp://x"], home);
    expect(usage.code).to.equal(64);
  });

  it("npm run onboard runs the same script", async () => {
    const home = newHome();
    const r = await run("npm", ["run", "--silent", "onboard", "--", "--base-url", s.url, "--label", "via-npm"], home);
    expect(r.code, r.stderr).to.equal(0);
    expect(JSON.parse(readFileSync(configOf(home), "utf8"))).to.include({ label: "via-npm", baseUrl: s.url });
  });
});
