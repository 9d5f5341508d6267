/**
 * `NETWORK=base-sepolia npm start`: the embedded sandbox of Base Sepolia. Its chain answers chain id 0x14a34, the code
 * at Base Sepolia's USDC address answers name() "USDC" and version() "2", the README's worked example runs against it
 * as an owner would run it, and an agent pays the service's own seller route there (which must name that token's domain).
 */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { Interface } from "ethers";
import { NETWORKS } from "../../src/chain/networks";
import { siweVerify } from "../helpers/owner";
import { runReadmeExample } from "../helpers/readmeExample";
import { randomOwner, remoteStack, type RemoteStack } from "../helpers/stack";

const ROOT = join(__dirname, "..", "..");
const SEPOLIA = NETWORKS["base-sepolia"];

async function rpc(url: string, method: string, params: unknown[] = []): Promise<string> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await res.json()) as { result: string }).result;
}

describe("NETWORK=base-sepolia npm start (the embedded sandbox of Base Sepolia)", function () {
  this.timeout(180_000);
  let child: ChildProcess | undefined;
  let out = "";
  let chainRpc = "";
  let api = "";
  let s: RemoteStack;

  before(async () => {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0", NETWORK: "base-sepolia" };
    child = spawn(process.execPath, ["--import", "tsx", "src/index.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start-up banner within 120 s:\n${out}`)), 120_000);
      const watch = (b: Buffer) => {
        out += b.toString();
        if (out.includes("database:")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child!.stdout!.on("data", watch);
      child!.stderr!.on("data", watch);
      child!.once("exit", (code) => reject(new Error(`exited with ${code}:\n${out}`)));
    });
    chainRpc = /chain RPC:\s+(\S+)/.exec(out)![1];
    api = /API:\s+(\S+)/.exec(out)![1];
    s = remoteStack(api, SEPOLIA.chainId);
  });
  after(() => {
    child?.kill("SIGTERM");
  });

  it("says it is a sandbox of base-sepolia, chain id 84532, with Base Sepolia's USDC address", () => {
    expect(out).to.match(/network:\s+base-sepolia \(chain id 84532\), a sandbox/);
    expect(out).to.match(/USDC:\s+0x036CbD53842c5426634e7929541eC2318f3dCF7e/);
    expect(out).to.not.match(/0x[0-9a-fA-F]{64}/); // no private key is ever printed
  });

  it("answers eth_chainId 0x14a34, and the code at 0x036C…CF7e answers name() USDC and version() 2", async () => {
    expect(await rpc(chainRpc, "eth_chainId")).to.equal("0x14a34");
    const usdc = new Interface(["function name() view returns (string)", "function version() view returns (string)"]);
    const call = async (fn: "name" | "version") =>
      usdc.decodeFunctionResult(
        fn,
        await rpc(chainRpc, "eth_call", [
          { to: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", data: usdc.encodeFunctionData(fn) },
          "latest",
        ]),
      )[0] as string;
    expect([await call("name"), await call("version")]).to.deep.equal(["USDC", "2"]);
    const health = (await (await fetch(`${api}/health`)).json()) as { chainId: number; networks: { name: string }[] };
    expect(health).to.include({ chainId: 84532 });
    expect(health.networks.map((n) => n.name)).to.deep.equal(["base-sepolia"]);
  });

  it("runs the README's worked example as an owner would, then pays the sandbox's own seller on Base Sepolia", async () => {
    const owner = randomOwner();
    const signIn = await siweVerify(s, owner, { chainId: SEPOLIA.chainId });
    expect(signIn.status, JSON.stringify(signIn.body)).to.equal(200);
    const { agentAddress, apiKey } = await s.genesis();
    const linked = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agentAddress) });
    expect(linked.status, JSON.stringify(linked.body)).to.equal(200);

    const seller = `${api}/sell/agent-intel`;
    const run = await runReadmeExample({
      BASE: api,
      OWNER_API_KEY: signIn.body.apiKey,
      OWNER_PRIVATE_KEY: owner.privateKey,
      AGENT: agentAddress,
      SELLER_URL: seller,
    });
    expect(run.code, `${run.stderr}\n${run.stdout}`).to.equal(0);
    const [limits] = (await s.api("GET", `/limits?address=${agentAddress}`, { key: apiKey })).body.agents;
    expect(limits).to.include({ network: "base-sepolia", deployed: true, paused: false });

    // The seller route asks for Base Sepolia's USDC domain ("USDC"): signed under another name, its settlement would fail.
    const funded = await s.api("POST", "/dev/faucet", { body: { agentAddress, amount: "1" } });
    expect(funded.status).to.equal(200);
    const paid = await s.api("POST", "/pay", {
      key: apiKey,
      body: { agentAddress, serviceUrl: seller, maxAmount: "0.05", intent: "paid on Base Sepolia" },
    });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body.response.body.payment).to.include({ network: "base-sepolia", status: "settled" });
  });

  it("stops cleanly on SIGTERM", async () => {
    const exited = new Promise<number | null>((r) => child!.once("exit", (code) => r(code)));
    child!.kill("SIGTERM");
    expect(await exited).to.equal(0);
    child = undefined;
  });
});
