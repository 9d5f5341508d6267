/**
 * A TCP gate in front of the chain's or the store's port (chaos.ts): close() is that process dying as its clients see
 * it (open connections reset, new ones refused), open() is it back on the same address with its state, as a node or a
 * MongoDB server restarted on its data directory comes back. (The embedded chain and CongoDB keep their state in
 * memory only, so their own processes cannot be restarted without starting from nothing.)
 */
import { startTcpProxy } from "../../test/helpers/tcpProxy";

export interface Gate {
  port: number;
  isOpen(): boolean;
  open(): Promise<void>;
  close(): Promise<void>;
}

/** The tests' TCP pass-through (test/helpers/tcpProxy.ts), as chaos.ts opens and closes it. */
export async function startGate(targetHost: string, targetPort: number): Promise<Gate> {
  const proxy = await startTcpProxy(targetHost, targetPort);
  let open = true;
  return {
    port: proxy.port,
    isOpen: () => open,
    open: async () => {
      if (open) return;
      await proxy.start();
      open = true;
    },
    close: async () => {
      open = false;
      await proxy.stop();
    },
  };
}
