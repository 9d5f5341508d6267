/** What the indexer is given and what one run of it reports. */
import type { Logger } from "pino";
import type { ChainClient } from "../chain/client";
import type { Store } from "../store";
import type { LedgerLinkerDeps } from "./ledgerLinks";

export interface IndexerDeps {
  chain: ChainClient;
  store: Store;
  chainId: number;
  /** An event is confirmed when blockNumber <= head - confirmations (0: immediately). */
  confirmations: number;
  /** First block of the first run (the factory's deploy block). */
  startBlock: number;
  logger: Logger;
  /** Blocks per eth_getLogs call. Default 2000. */
  batchBlocks?: number;
  /** Blocks re-read below the cursor on every run on top of `confirmations` (reorg safety). Default 12. */
  reorgBlocks?: number;
  /** Addresses (policies) or agent topics per eth_getLogs call. Default 100. */
  addressChunk?: number;
  onConfirmed?: LedgerLinkerDeps["onConfirmed"]; // owner alerts: told each event as it becomes confirmed
}

/** What the last run did (for logs, tests and measurements). */
export interface IndexerRunStats {
  fromBlock: number;
  toBlock: number;
  head: number;
  /** chainEvents inserted or changed (re-included in another block). */
  written: number;
  /** chainEvents marked removed (their block left the canonical chain). */
  removed: number;
  /** chainEvents that became confirmed in this run. */
  confirmed: number;
  /** Ledger entries whose `onchain` this run changed. */
  linked: number;
  policies: number;
  ms: number;
}
