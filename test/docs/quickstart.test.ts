/**
 * The README's quickstart, run as a newcomer runs it: `npm start` as a child process (on a free port), then the second
 * block's lines verbatim in bash with a fresh HOME (the only change: the port), owner CLI included. It must end with an
 * approved payment, a blocked one, one approved after waiting for the owner, and the agent paused.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";

const ROOT = join(__dirname, "..", "..");

/** The quickstart's shell blocks, in order. */
function quickstartBlocks(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("\n## Quickstart\n");
  const end = readme.indexOf("\n## ", start + 1);
  if (start < 0) throw new Error("README.md has no Quickstart section");
  return [...readme.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** Output of a child process, and a promise of its exit code. */
function watch(child: ChildProcess): { text: () => string; exit: Promise<number | null> } {
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
  return { text: () => out, exit: new Promise((resolve) => child.once("exit", resolve)) };
}

describe("the README's quickstart, verbatim, against npm start", function () {
  this.timeout(900_000);
  let server: ChildProcess | undefined;
  let home: string;

  before(() => {
    home = mkdtempSync(join(tmpdir(), "spendgate-quickstart-"));
  });
  after(async () => {
    if (server && server.exitCode === null) {
      const gone = new Promise((resolve) => server!.once("exit", resolve));
      server.kill("SIGTERM");
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 20_000))]);
      if (server.exitCode === null) server.kill("SIGKILL");
    }
    rmSync(home, { recursive: true, force: true });
  });

  it("starts, onboards, signs a policy with the CLI, pays, is blocked, waits, is approved, and pauses", async () => {
    const [startBlock, commands] = quickstartBlocks();
    expect(startBlock.trim()).to.equal("npm install && npm start");
    // npm install has run: `npm start` it is, on a free port.
    server = spawn("npm", ["start"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: home, PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const started = watch(server);
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const m = /SpendGate is running at (\S+)\n/.exec(started.text());
        if (m) {
          clearInterval(timer);
          resolve(m[1]);
        }
      }, 200);
      void started.exit.then((code) => {
        clearInterval(timer);
        reject(new Error(`npm start exited with ${code}:\n${started.text()}`));
      });
    });

    expect(commands).to.include("http://127.0.0.1:8402");
    const script = commands.replaceAll("http://127.0.0.1:8402", url);
    const shell = spawn("bash", ["-e", "-c", script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const ran = watch(shell);
    const code = await ran.exit;
    const out = ran.text();
    expect(code, out).to.equal(0);
    expect(out).to.include("Signed in to").and.include("Linked agent").and.include("Policy deployed");
    expect(out).to.include('"status":"approved"').and.include('"reason":"payee_not_allowed"').and.include('"status":"pending"');
    expect(out).to.include("paused: every payment is blocked on-chain").and.include("PAUSED");
    expect(out).to.include("The server's GET /limits matches the chain.");

    // What the ledger holds, asked with the agent's own key.
    const { agentAddress, apiKey } = JSON.parse(readFileSync(join(home, ".spendgate", "config.json"), "utf8")) as {
      agentAddress: string;
      apiKey: string;
    };
    const get = async (path: string) => (await fetch(url + path, { headers: { Authorization: `Bearer ${apiKey}` } })).json();
    const ledger = (await get(`/ledger?address=${agentAddress}`)) as {
      transactions: { status: string; amount: string; reason?: string | null }[];
    };
    const seen = ledger.transactions.map((t) => `${t.status} ${t.amount}${t.reason ? ` ${t.reason}` : ""}`).reverse();
    expect(seen).to.deep.equal(["approved 0.05", "blocked 0.05 payee_not_allowed", "approved 0.75", "blocked 0.05 policy_paused"]);
    const limits = (await get(`/limits?address=${agentAddress}`)) as { agents: { paused: boolean }[] };
    expect(limits.agents[0].paused).to.equal(true);
  });
});
