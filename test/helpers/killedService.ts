/**
 * Killing a SpendGate process at an exact point of a payment: the service runs as its own process (`node --import
 * tsx src/index.ts`, as the restart tests run it), and its store is a CongoDB server in the test's process whose write
 * commands the test can watch. A trap names one write (a command on a collection, matched by its content) and kills the
 * service with SIGKILL when it arrives: `before` it is applied (the write never lands: the process died just before
 * it), or `after` (it landed, and the process died before it heard so). Either way the service never gets the answer.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { EmbeddedChain } from "../../src/dev/embeddedChain";
import { installEmbeddedIndexes } from "../../src/dev/congoIndexes";
import { installSharedMingoOptions } from "../../src/dev/congoMingo";

const ROOT = join(__dirname, "..", "..");

/** A write command as the store receives it. */
export interface StoreWrite {
  /** update, findAndModify, insert or delete. */
  name: string;
  collection: string;
  command: Record<string, any>;
}

export interface TappedStore {
  uri: string;
  /**
   * Arms a one-shot trap: the next write `match` accepts runs `act` (the kill) `when` it would be applied, and is never
   * answered. Resolves with that write once the trap sprang.
   */
  trap(match: (w: StoreWrite) => boolean, when: "before" | "after", act: () => void): Promise<StoreWrite>;
  stop(): Promise<void>;
}

interface Handler {
  handle(context: { command: Record<string, any> }): Promise<unknown>;
}

const WRITES = ["update", "findAndModify", "insert", "delete"];

/** An embedded CongoDB (memory storage, with the service's index layer) whose writes the test can trap. */
export async function startTappedStore(): Promise<TappedStore> {
  const port = await freePort();
  const { congodb } = await import("@push.rocks/smartmongo");
  installSharedMingoOptions(congodb);
  const server = new congodb.CongoServer({ host: "127.0.0.1", port, storage: "memory" });
  installEmbeddedIndexes(server);
  const traps: { match: (w: StoreWrite) => boolean; when: "before" | "after"; act: () => void; sprang: (w: StoreWrite) => void }[] = [];
  const router = (server as unknown as { commandRouter: { handlers: Map<string, Handler> } }).commandRouter;
  for (const name of WRITES) {
    const handler = router.handlers.get(name);
    if (!handler) throw new Error(`CongoDB has no ${name} handler`);
    const handle = handler.handle.bind(handler);
    handler.handle = async (context) => {
      const write: StoreWrite = { name, collection: String(context.command[name]), command: context.command };
      const i = traps.findIndex((t) => t.match(write));
      if (i < 0) return handle(context);
      const [t] = traps.splice(i, 1);
      if (t.when === "after") await handle(context);
      t.act();
      t.sprang(write);
      return new Promise(() => undefined); // the process that sent it is dead: no answer
    };
  }
  await server.start();
  return {
    uri: `mongodb://127.0.0.1:${port}`,
    trap: (match, when, act) => new Promise((sprang) => traps.push({ match, when, act, sprang })),
    stop: () => server.stop(),
  };
}

/**
 * The environment of a service process in production mode on the test's embedded chain and the store at `storeUri`
 * (a database of its own named from `db`): every dependency named, sellers on 127.0.0.1 allowed.
 */
export function processEnv(chain: EmbeddedChain, storeUri: string, db: string): Record<string, string> {
  return {
    RPC_URL: chain.rpcUrl,
    MONGODB_URI: storeUri,
    MONGODB_DB: `${db}_${randomBytes(4).toString("hex")}`,
    WALLET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    OPERATOR_PRIVATE_KEY: chain.operator.privateKey,
    FACTORY_ADDRESS: chain.addresses.factory,
    FACTORY_DEPLOY_BLOCK: String(chain.deployBlock),
    FACILITATOR_PRIVATE_KEY: chain.facilitator.privateKey,
    GENESIS_OPEN: "true",
    ALLOW_PRIVATE_SELLERS: "true",
    ALLOW_HTTP_SELLERS: "true",
    CONFIRMATIONS: "0",
    LOG_LEVEL: "warn",
  };
}

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** What it printed so far (its logs at the env's LOG_LEVEL). */
  output(): string;
  /** SIGKILL, and resolves once the process is gone. */
  kill(): Promise<void>;
}

/** Starts the service as its own process with `env` (production mode: every dependency named) and waits for it. */
export async function spawnService(env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  // `node --import tsx`, not the tsx CLI: the CLI runs the script in a grandchild that a kill would miss.
  const child = spawn(process.execPath, ["--import", "tsx", "src/index.ts"], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${out}`)), 60_000);
    const watch = (b: Buffer) => {
      out += b.toString();
      if (out.includes("SpendGate is running")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on("data", watch);
    child.stderr.on("data", watch);
    child.once("exit", (code) => reject(new Error(`service exited with ${code}:\n${out}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    output: () => out,
    kill: async () => {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
