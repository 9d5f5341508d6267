/**
 * A SpendGate cluster on this machine, each part its own process: a standalone chain (the embedded Hardhat chain served
 * over JSON-RPC, with an OperatorSet of every instance's key as the factory's default operator), one CongoDB server,
 * and N SpendGate instances on their own ports, each with its own operator and facilitator keys and INSTANCE_ID, all
 * on that chain and that database. Used by `npm run cluster` and by test/e2e/cluster.test.ts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import { basename, join } from "node:path";
import { Wallet } from "ethers";

const ROOT = join(__dirname, "..", "..");

export interface ChainInfo {
  rpcUrl: string;
  chainId: number;
  addresses: { usdc: string; multicall3: string; factory: string; operatorSet?: string };
  deployBlock: number;
}

export interface Instance {
  name: string;
  url: string;
  operator: string;
  child: ChildProcess;
  /** Everything it printed (for a failure report). */
  output: string[];
  alive: boolean;
}

export interface Cluster {
  chain: ChainInfo;
  mongoUri: string;
  database: string;
  instances: Instance[];
  /** The chain's and the store's process ids (for CPU and memory readings). */
  pids: { chain: number; store: number };
  /** SIGKILL: no shutdown, leases and in-flight payments left as a crash leaves them. */
  kill(instance: Instance): Promise<void>;
  /**
   * Starts `instance` again under INSTANCE_ID `name` (default: its own), with its operator and facilitator keys: a
   * rescheduled container, at the same address (a container behind its service's stable address). The new instance
   * is added to `instances`; the old entry stays (dead).
   */
  restart(instance: Instance, name?: string): Promise<Instance>;
  /** Sends `signal` to the chain's or the store's process (chaos.ts: SIGSTOP and SIGCONT, a node that hangs). */
  signal(which: "chain" | "store", signal: NodeJS.Signals): void;
  close(): Promise<void>;
}

export interface ClusterOptions {
  instances?: number;
  /** Extra environment of every instance. */
  env?: Record<string, string>;
  /** The addresses the instances use for the chain and the store instead of theirs (chaos.ts puts gates in between). */
  via?: (direct: { rpcUrl: string; mongoUri: string }) => Promise<{ rpcUrl: string; mongoUri: string }>;
  log?: (line: string) => void;
  /** More node flags for one instance (by its name), e.g. --cpu-prof for the instance alone. */
  instanceNodeArgs?: (name: string) => string[];
}

/** Spawns `node --import tsx <script>` (not the tsx CLI, whose grandchild a kill would miss) and waits for `ready`. */
function spawnNode(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  output: string[],
  extraArgs: string[] = [],
  // CLUSTER_START_TIMEOUT_MS: a machine under heavy load may need longer.
  timeoutMs = Number(process.env.CLUSTER_START_TIMEOUT_MS ?? 90_000),
) {
  // CLUSTER_NODE_ARGS: more node flags for every process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (refused in NODE_OPTIONS).
  const nodeArgs = [...(process.env.CLUSTER_NODE_ARGS ?? "").split(" ").filter(Boolean), ...extraArgs];
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // CLUSTER_LOG_DIR: every process's output is appended to <dir>/<INSTANCE_ID or script>.log as well.
  const logFile = process.env.CLUSTER_LOG_DIR
    ? join(process.env.CLUSTER_LOG_DIR, `${env.INSTANCE_ID ?? basename(args[0], ".ts")}.log`)
    : undefined;
  const started = new Promise<RegExpMatchArray>((resolve, reject) => {
    let text = "";
    const timer = setTimeout(
      () => reject(new Error(`${args.join(" ")} did not start in ${timeoutMs} ms:\n${text.slice(-3000)}`)),
      timeoutMs,
    );
    const watch = (chunk: Buffer) => {
      const s = chunk.toString();
      if (logFile) appendFileSync(logFile, s);
      output.push(s);
      if (output.length > 200) output.splice(0, output.length - 200);
      text += s;
      const m = text.match(ready);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout.on("data", watch);
    child.stderr.on("data", watch);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(" ")} exited (${code}):\n${text.slice(-3000)}`));
    });
  });
  return { child, started };
}

async function stop(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const log = opts.log ?? (() => undefined);
  const n = opts.instances ?? 3;
  const operators = Array.from({ length: n }, () => Wallet.createRandom());
  const facilitators = Array.from({ length: n }, () => Wallet.createRandom());
  const children: ChildProcess[] = [];
  try {
    // The chain's own operator is one more member; the instances use theirs. Facilitators are funded members too
    // (funding is what the chain script does for the keys it is given; membership gives them nothing they use).
    const chainOut: string[] = [];
    const chainProc = spawnNode(
      ["scripts/chain.ts", "--port", "0", "--json", "--operators", [...operators, ...facilitators].map((w) => w.address).join(",")],
      {},
      /CHAIN (\{.*\})\n/,
      chainOut,
    );
    children.push(chainProc.child);
    const mongoOut: string[] = [];
    const mongoProc = spawnNode(["scripts/cluster/mongo.ts"], {}, /MONGODB_URI=(\S+)\n/, mongoOut);
    children.push(mongoProc.child);
    const chain = JSON.parse((await chainProc.started)[1]) as ChainInfo;
    const mongoUri = (await mongoProc.started)[1];
    log(`chain ${chain.rpcUrl} (factory ${chain.addresses.factory}, operator set ${chain.addresses.operatorSet}); CongoDB ${mongoUri}`);

    const database = `cluster_${randomBytes(4).toString("hex")}`;
    const seen = opts.via ? await opts.via({ rpcUrl: chain.rpcUrl, mongoUri }) : { rpcUrl: chain.rpcUrl, mongoUri };
    const shared = {
      RPC_URL: seen.rpcUrl,
      CHAIN_ID: String(chain.chainId),
      FACTORY_ADDRESS: chain.addresses.factory,
      FACTORY_DEPLOY_BLOCK: String(chain.deployBlock),
      MONGODB_URI: seen.mongoUri,
      MONGODB_DB: database,
      WALLET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      GENESIS_OPEN: "true",
      ALLOW_PRIVATE_SELLERS: "true",
      ALLOW_HTTP_SELLERS: "true",
      CONFIRMATIONS: "0",
      NETWORK_NAME: "cluster",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "1000000",
      ...opts.env,
    };
    const keysOf = new Map<string, number>();
    const startInstance = async (name: string, i: number, port = 0): Promise<Instance> => {
      const output: string[] = [];
      const op = operators[i];
      const proc = spawnNode(
        ["src/index.ts"],
        {
          ...shared,
          PORT: String(port),
          INSTANCE_ID: name,
          OPERATOR_PRIVATE_KEY: op.privateKey,
          FACILITATOR_PRIVATE_KEY: facilitators[i].privateKey,
        },
        /SpendGate is running at (\S+)\n/,
        output,
        opts.instanceNodeArgs?.(name) ?? [],
      );
      children.push(proc.child);
      const url = (await proc.started)[1];
      log(`${name} at ${url} (operator ${op.address})`);
      const inst: Instance = { name, url, operator: op.address, child: proc.child, output, alive: true };
      keysOf.set(name, i);
      proc.child.once("exit", () => (inst.alive = false));
      return inst;
    };
    const instances = await Promise.all(operators.map((_, i) => startInstance(`instance-${i + 1}`, i)));
    const procs = { chain: chainProc.child, store: mongoProc.child };
    return {
      chain,
      mongoUri,
      database,
      instances,
      pids: { chain: chainProc.child.pid ?? 0, store: mongoProc.child.pid ?? 0 },
      kill: async (inst) => {
        await stop(inst.child, "SIGKILL");
        inst.alive = false;
      },
      restart: async (inst, name = inst.name) => {
        const started = await startInstance(name, keysOf.get(inst.name) ?? 0, Number(new URL(inst.url).port));
        instances.push(started);
        return started;
      },
      signal: (which, sig) => {
        procs[which].kill(sig);
      },
      close: async () => {
        for (const c of children.reverse()) await stop(c);
      },
    };
  } catch (err) {
    for (const c of children.reverse()) await stop(c, "SIGKILL");
    throw err;
  }
}
