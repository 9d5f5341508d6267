/**
 * A local server (the embedded chain, the embedded store) in a worker thread of its own, so its work runs on another
 * core than the service's event loop. Both sides live here: startInThread (the caller's) starts a worker module that
 * calls serveFromThread (the worker's), which starts the server, posts what the caller needs to reach it (plain data:
 * functions cannot cross threads) and, on "close", stops it and ends the thread.
 */
import { parentPort, workerData, Worker } from "node:worker_threads";

export interface ThreadServer<T> {
  info: T;
  /** Its 'exit' event follows close(). */
  worker: Worker;
  /** Stops the server and waits for the thread to end; rejects if it did not end cleanly. */
  close(): Promise<void>;
}

const CLOSE_TIMEOUT_MS = 10_000;

/**
 * The worker runs TypeScript whatever started this process (the tsx CLI, `node --import tsx`, mocha with tsx/cjs):
 * it registers tsx's require hook itself, by absolute paths so that any working directory works.
 */
function bootstrap(file: string): string {
  return `require(${JSON.stringify(require.resolve("tsx/cjs"))});\nrequire(${JSON.stringify(file)});\n`;
}

/** Starts `file` (an absolute path to a module that calls serveFromThread) in a worker; rejects if its start fails. */
export async function startInThread<T>(file: string, data: unknown): Promise<ThreadServer<T>> {
  const worker = new Worker(bootstrap(file), { eval: true, workerData: data });
  const exited = new Promise<number>((resolve) => worker.once("exit", resolve));
  const info = await new Promise<T>((resolve, reject) => {
    worker.once("message", (msg: { ready: T }) => {
      resolve(msg.ready);
    });
    worker.once("error", reject);
    void exited.then((code) => {
      reject(new Error(`the thread exited (code ${code}) before it was ready`));
    });
  }).catch(async (err: unknown) => {
    // The thread ends on its own after a failed start; make sure of it before answering.
    await Promise.race([exited, new Promise((r) => setTimeout(r, CLOSE_TIMEOUT_MS).unref())]);
    await worker.terminate();
    throw err;
  });
  // After start, a failure in the server's thread is as fatal as one on this thread would be.
  worker.on("error", (err) => {
    throw new Error(`a server thread failed: ${err.message}`, { cause: err });
  });
  let closing: Promise<void> | undefined;
  return {
    info,
    worker,
    close() {
      closing ??= (async () => {
        worker.postMessage("close");
        const timer = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS);
        const code = await exited;
        clearTimeout(timer);
        if (code !== 0) throw new Error(`the server thread ended with code ${code}`);
      })();
      return closing;
    },
  };
}

/**
 * The worker's side: starts the server with the caller's data, answers its info, stops it and ends on "close".
 * `data: never` lets `start` declare the type the caller sends (the thread boundary cannot check it).
 */
export function serveFromThread(start: (data: never) => Promise<{ info: unknown; close(): Promise<void> }>): void {
  const port = parentPort;
  if (!port) throw new Error("serveFromThread runs only in a worker thread (startInThread)");
  // A failed start rejects here: the thread ends with it and its 'error' event carries it to startInThread.
  void start(workerData as never).then((server) => {
    port.on("message", (msg: unknown) => {
      if (msg !== "close") return;
      // Servers may keep timers (Hardhat's interval mining) that would hold the thread: exit once they are down.
      server.close().then(
        () => process.exit(0),
        (err: unknown) => {
          console.error("server thread: close failed:", err);
          process.exit(1);
        },
      );
    });
    port.postMessage({ ready: server.info });
  });
}
