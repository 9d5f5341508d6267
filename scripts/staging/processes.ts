/** Child processes of the staging command: started in the project folder, their output kept (the tail) or shown. */
import { spawn, type ChildProcess } from "node:child_process";

export interface Child {
  name: string;
  process: ChildProcess;
  /** The last 64 KB of its output (all of it when `show` is false; also printed when `show` is true). */
  tail(): string;
  /** The first match of `pattern` in its output; rejects when it exits first. */
  match(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

const TAIL = 64 * 1024;

export function startChild(
  name: string,
  command: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; show?: boolean },
): Child {
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  const waiters = new Set<() => void>();
  const onData = (stream: NodeJS.WriteStream) => (d: Buffer) => {
    if (opts.show) stream.write(d);
    text = (text + d.toString()).slice(-TAIL);
    for (const w of waiters) w();
  };
  child.stdout.on("data", onData(process.stdout));
  child.stderr.on("data", onData(process.stderr));
  const exited = new Promise<number | null>((resolve) => {
    child.once("error", () => resolve(null));
    child.once("exit", (code) => resolve(code));
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    process: child,
    tail: () => text,
    exited,
    match(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`${name}: no ${pattern} within ${timeoutMs} ms`)), timeoutMs);
        const check = () => {
          const m = pattern.exec(text);
          if (m) done(undefined, m);
        };
        const done = (err?: Error, m?: RegExpExecArray) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (err) reject(err);
          else resolve(m!);
        };
        waiters.add(check);
        void exited.then((code) => done(new Error(`${name} exited (code ${code}) before printing ${pattern}:\n${text.slice(-3000)}`)));
        check();
      });
    },
    async stop(graceMs = 10_000) {
      if (!running()) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => running() && child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Calls one JSON-RPC method; throws the node's error. */
export async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}
