/**
 * Before anything starts: the compiled service refuses to become the sandbox without SANDBOX=1 (every production
 * variable it lacks named at once), and `npm start` says a port is taken, with PORT=, before booting the chain.
 */
import { spawn } from "node:child_process";
import { createServer, type AddressInfo, type Server } from "node:net";
import { join } from "node:path";
import { expect } from "chai";
import { ConfigError, loadConfig } from "../../src/config";
import { sandboxRefusal } from "../../src/start/preflight";

const ROOT = join(__dirname, "..", "..");

describe("preflight: no sandbox by mistake, a taken port said at once", function () {
  this.timeout(60_000);

  it("the compiled service without RPC_URL refuses, naming RPC_URL, SANDBOX=1 and every production variable missing", () => {
    const message = sandboxRefusal(loadConfig({}), {}, true);
    expect(message).to.be.a("string");
    for (const name of [
      "RPC_URL",
      "SANDBOX=1",
      "MONGODB_URI",
      "WALLET_ENCRYPTION_KEY",
      "OPERATOR_PRIVATE_KEY",
      "FACILITATOR_PRIVATE_KEY",
      "FACTORY_ADDRESS",
    ])
      expect(message).to.include(name);
    expect(sandboxRefusal(loadConfig({}), { SANDBOX: "1" }, true), "SANDBOX=1 asks for it").to.equal(null);
    expect(sandboxRefusal(loadConfig({}), {}, false), "npm start is the sandbox").to.equal(null);
  });

  it("the configuration check lists every missing production variable in one pass (WALLET_ENCRYPTION_KEY too)", () => {
    let problems: string[] = [];
    try {
      loadConfig({ RPC_URL: "http://127.0.0.1:8545" });
    } catch (err) {
      problems = (err as ConfigError).problems;
    }
    const named = problems.map((p) => p.split(":")[0]);
    expect(named).to.include.members(["OPERATOR_PRIVATE_KEY", "MONGODB_URI", "FACILITATOR_PRIVATE_KEY", "WALLET_ENCRYPTION_KEY"]);
  });

  it("npm start on a taken port exits at once, suggesting PORT=, without booting the chain", async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const child = spawn(process.execPath, ["--import", "tsx", "src/index.ts"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port) },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (b: Buffer) => (out += b.toString()));
      child.stderr.on("data", (b: Buffer) => (out += b.toString()));
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      expect(code, out).to.equal(2);
      expect(out)
        .to.include(`Port ${port} on 127.0.0.1 is in use`)
        .and.include(`PORT=${port + 1} npm start`);
      expect(out, "nothing booted").not.to.include("Starting SpendGate");
    } finally {
      taken.close();
    }
  });
});
