/**
 * npm run soak: SOAK_REQUESTS (60,000) mixed requests against one SpendGate process as production runs it (RPC_URL and
 * MONGODB_URI: a standalone chain process and a CongoDB server process, see scripts/cluster; no heap cap): GET /limits, GET /ledger, GET /wallet/balance, the MCP tools get_limits
 * and list_transactions, and a payment every SOAK_PAY_EVERY (50) requests, SOAK_CONCURRENCY (16) at a time, from
 * SOAK_AGENTS (10) agents. Samples the service process's RSS as it goes; target: under 512 MiB throughout. Exits 1
 * past it or on any 5xx. Not part of `npm test` (it takes minutes). SOAK_EMBEDDED=1 runs `npm start`'s embedded
 * mode instead, whose process also holds the Hardhat chain and CongoDB (their memory counts then). SOAK_MINUTES
 * runs for that long instead of SOAK_REQUESTS (issue 27: `npm start`'s memory at 5 and 30 minutes of payments).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fundAgents, onboardAgent, type ClusterAgent } from "./cluster/client";
import { startCluster, type Cluster } from "./cluster/cluster";

const REQUESTS = Number(process.env.SOAK_REQUESTS ?? 60_000);
const PAY_EVERY = Number(process.env.SOAK_PAY_EVERY ?? 50);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16);
const AGENTS = Number(process.env.SOAK_AGENTS ?? 10);
const LIMIT_MIB = 512;
/** SOAK_MINUTES: run for this long instead of SOAK_REQUESTS, printing RSS and payments at each of SOAK_MARKS (minutes). */
const MINUTES = Number(process.env.SOAK_MINUTES ?? 0);
const MARKS = (process.env.SOAK_MARKS ?? "1,5,10,15,20,25,30").split(",").map(Number);

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function main(): Promise<void> {
  if (process.env.SOAK_EMBEDDED !== "1")
    return soak(
      await startCluster({
        instances: 1,
        env: { RATE_LIMIT_PER_MINUTE: "100000000", SELL_PRICE: "0.01", OWNER_GAS_ALLOWANCE_GWEI: "1e12" },
      }),
    );
  const child = spawn(process.execPath, ["--import", "tsx", "src/index.ts"], {
    cwd: join(__dirname, ".."),
    env: {
      ...process.env,
      ...(process.env.SOAK_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SOAK_NODE_OPTIONS } : {}),
      PORT: "0",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "100000000",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const watch = (b: Buffer) => {
      out += b.toString();
      const m = /SpendGate is running at (\S+)\n/.exec(out);
      if (m) resolve(m[1]);
    };
    child.stdout.on("data", watch);
    child.stderr.on("data", watch);
    child.once("exit", (code) => reject(new Error(`service exited (${code}):\n${out}`)));
  });
  try {
    await run(url, child.pid!, async (addresses) => {
      for (const agentAddress of addresses) {
        await fetch(`${url}/dev/faucet`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ agentAddress, amount: "100000" }),
        });
      }
    });
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

async function soak(cluster: Cluster): Promise<void> {
  try {
    const [inst] = cluster.instances;
    await run(inst.url, inst.child.pid!, (addresses) =>
      fundAgents(cluster.chain.rpcUrl, cluster.chain.addresses.usdc, addresses, 100_000_000_000n),
    );
  } finally {
    await cluster.close();
  }
}

async function run(url: string, pid: number, fund: (addresses: string[]) => Promise<void>): Promise<void> {
  {
    const agents: ClusterAgent[] = [];
    for (let i = 0; i < AGENTS; i++)
      agents.push(
        await onboardAgent(url, 8453, { perTxLimit: "1", dailyBudget: "100000", approvalThreshold: "1", allowlist: ["127.0.0.1"] }),
      );
    await fund(agents.map((a) => a.agentAddress));
    const start = rssMiB(pid);
    console.log(`service up at ${url} (pid ${pid}); ${AGENTS} agents onboarded; rss ${start.toFixed(0)} MiB`);

    const mcp = (a: ClusterAgent, id: number, name: string, args: Record<string, unknown>) =>
      fetch(`${url}/mcp`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${a.apiKey}`,
          "X-Agent-Address": a.agentAddress,
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }),
      });
    const kinds = (process.env.SOAK_KINDS ?? "limits,ledger,balance,mcp_limits,mcp_transactions").split(",");
    const counts = new Map<string, number>();
    const errors = new Map<string, number>();
    let peak = start;
    let next = 0;
    const started = Date.now();
    const sampler = setInterval(() => {
      const r = rssMiB(pid);
      peak = Math.max(peak, r);
    }, 250);
    const deadline = MINUTES > 0 ? started + MINUTES * 60_000 : Infinity;
    const more = () => (MINUTES > 0 ? Date.now() < deadline : next < REQUESTS);
    const marks = MARKS.filter((m) => m <= MINUTES).map((m) =>
      setTimeout(
        () =>
          console.log(
            `MARK ${m} min: rss ${rssMiB(pid).toFixed(0)} MiB (peak ${peak.toFixed(0)}), ${next} requests, ${counts.get("pay") ?? 0} payments`,
          ),
        m * 60_000 - 500,
      ),
    );
    const progress = setInterval(() => {
      console.log(
        `  ${next} requests, ${((Date.now() - started) / 1000).toFixed(0)} s, rss ${rssMiB(pid).toFixed(0)} MiB (peak ${peak.toFixed(0)})`,
      );
    }, 15_000);
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (more()) {
          const i = next++;
          const a = agents[i % agents.length];
          const auth = { Authorization: `Bearer ${a.apiKey}` };
          const kind = i % PAY_EVERY === 0 ? "pay" : kinds[i % kinds.length];
          let res: Response;
          if (kind === "pay") {
            res = await fetch(`${url}/pay`, {
              method: "POST",
              headers: { ...auth, "Content-Type": "application/json" },
              body: JSON.stringify({
                agentAddress: a.agentAddress,
                serviceUrl: `${url}/sell/agent-intel`,
                maxAmount: "0.01",
                intent: `soak ${i}`,
              }),
            });
          } else if (kind === "limits") res = await fetch(`${url}/limits?address=${a.agentAddress}`, { headers: auth });
          else if (kind === "ledger") res = await fetch(`${url}/ledger?address=${a.agentAddress}&limit=20`, { headers: auth });
          else if (kind === "balance") res = await fetch(`${url}/wallet/balance?address=${a.agentAddress}`, { headers: auth });
          else if (kind === "mcp_limits") res = await mcp(a, i, "get_limits", {});
          else res = await mcp(a, i, "list_transactions", { limit: 10 });
          await res.arrayBuffer();
          counts.set(kind, (counts.get(kind) ?? 0) + 1);
          if (res.status >= 500 || (kind === "pay" && res.status !== 200))
            errors.set(`${kind} ${res.status}`, (errors.get(`${kind} ${res.status}`) ?? 0) + 1);
        }
      }),
    );
    clearInterval(sampler);
    clearInterval(progress);
    marks.forEach(clearTimeout);
    const end = rssMiB(pid);
    peak = Math.max(peak, end);
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `${next} requests in ${seconds.toFixed(0)} s (${(next / seconds).toFixed(0)}/s): ${[...counts].map(([k, v]) => `${k} ${v}`).join(", ")}`,
    );
    console.log(`errors: ${errors.size ? [...errors].map(([k, v]) => `${k}: ${v}`).join(", ") : "none"}`);
    console.log(
      `service rss: start ${start.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB, end ${end.toFixed(0)} MiB (no heap cap); target < ${LIMIT_MIB} MiB: ${peak < LIMIT_MIB ? "PASS" : "MISS"}`,
    );
    if (peak >= LIMIT_MIB || errors.size) process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
