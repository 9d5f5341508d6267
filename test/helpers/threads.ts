import { readFileSync, readdirSync } from "node:fs";

/**
 * This process's OS threads but the pool of EDR's process-wide async runtime (tokio, shared by every thread's Hardhat,
 * whose idle workers linger a while): a server's thread must be gone after close.
 */
export function osThreads(): number {
  return readdirSync("/proc/self/task").filter((t) => !readFileSync(`/proc/self/task/${t}/comm`, "utf8").startsWith("tokio-")).length;
}
