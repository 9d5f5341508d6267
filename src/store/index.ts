/** MongoDB access: one client, typed collections and their indexes. Correct on real MongoDB and on CongoDB. */
import { MongoClient, type Collection, type Db, type Document } from "mongodb";
import type {
  AgentDoc,
  AllowlistDoc,
  ApiKeyDoc,
  ApprovalDoc,
  ChainEventDoc,
  IdempotencyDoc,
  IndexerStateDoc,
  PaymentDoc,
  OwnerDoc,
  PolicyDoc,
  SiweNonceDoc,
  UsedSignatureDoc,
  WalletKeyDoc,
} from "./documents";
import type { ChannelDoc } from "./channelDocuments";

export interface Store {
  client: MongoClient;
  db: Db;
  owners: Collection<OwnerDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  agents: Collection<AgentDoc>;
  walletKeys: Collection<WalletKeyDoc>;
  policies: Collection<PolicyDoc>;
  allowlists: Collection<AllowlistDoc>;
  usedSignatures: Collection<UsedSignatureDoc>;
  siweNonces: Collection<SiweNonceDoc>;
  payments: Collection<PaymentDoc>;
  /** batch-settlement channels the agents' wallets pay through (src/payments/schemes/channel.ts). */
  channels: Collection<ChannelDoc>;
  approvals: Collection<ApprovalDoc>;
  idempotency: Collection<IdempotencyDoc>;
  chainEvents: Collection<ChainEventDoc>;
  indexerState: Collection<IndexerStateDoc>;
  collection<T extends Document>(name: string): Collection<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Unique indexes are declared even though CongoDB does not enforce them: writes are upserts on the natural key. */
const INDEXES: Record<string, { key: Record<string, 1 | -1>; unique?: boolean; expireAfterSeconds?: number }[]> = {
  owners: [{ key: { address: 1 }, unique: true }],
  apiKeys: [{ key: { hash: 1 }, unique: true }, { key: { agentAddress: 1 } }, { key: { ownerAddress: 1 } }],
  agents: [{ key: { address: 1 }, unique: true }, { key: { registrationKey: 1 } }, { key: { ownerAddress: 1, createdAt: -1 } }],
  walletKeys: [{ key: { address: 1 }, unique: true }],
  policies: [{ key: { agentAddress: 1 }, unique: true }],
  allowlists: [{ key: { root: 1 }, unique: true }],
  usedSignatures: [{ key: { hash: 1 }, unique: true }],
  siweNonces: [
    { key: { nonce: 1 }, unique: true },
    { key: { expiresAt: 1 }, expireAfterSeconds: 0 },
  ],
  payments: [
    { key: { txnId: 1 }, unique: true },
    { key: { paymentId: 1 } },
    // GET /ledger's pages (newest first, _id breaking ties) and totals, per principal and status: equalities on the
    // leading fields, then the sort's own order, so MongoDB walks only the page and counts from the index alone.
    { key: { agentAddress: 1, createdAt: -1, _id: -1 } },
    { key: { agentAddress: 1, status: 1, createdAt: -1, _id: -1 } },
    { key: { ownerAddress: 1, createdAt: -1, _id: -1 } },
    { key: { ownerAddress: 1, status: 1, createdAt: -1, _id: -1 } },
    { key: { ownerAddress: 1, agentAddress: 1, createdAt: -1, _id: -1 } },
    { key: { status: 1, createdAt: -1, _id: -1 } },
    { key: { phase: 1 } },
    // The indexer's reads: entries by their transactions, and those changed since its previous run.
    { key: { txHash: 1 } },
    { key: { authorizeTxHash: 1 } },
    { key: { updatedAt: 1 } },
  ],
  // Recovery's sweep: channels holding a voucher whose run's lease ran out (src/payments/schemes/vouchers.ts).
  channels: [{ key: { channelId: 1 }, unique: true }, { key: { agentAddress: 1, status: 1 } }, { key: { "unsettled.leaseUntil": 1 } }],
  approvals: [
    { key: { approvalId: 1 }, unique: true },
    { key: { ownerAddress: 1, status: 1, requestedAt: -1 } },
    { key: { agentAddress: 1, status: 1 } },
  ],
  idempotency: [
    { key: { scope: 1 }, unique: true },
    { key: { expiresAt: 1 }, expireAfterSeconds: 0 },
  ],
  chainEvents: [
    { key: { chainId: 1, txHash: 1, logIndex: 1 }, unique: true },
    { key: { paymentId: 1 } },
    { key: { agentAddress: 1, blockNumber: -1 } },
    // The indexer's per-run reads: recent blocks, and events not yet confirmed.
    { key: { chainId: 1, blockNumber: 1 } },
    { key: { chainId: 1, confirmed: 1, blockNumber: 1 } },
  ],
  indexerState: [{ key: { name: 1, chainId: 1 }, unique: true }],
  gasUsage: [{ key: { ownerAddress: 1, day: 1 }, unique: true }],
  leases: [{ key: { name: 1 }, unique: true }, { key: { holder: 1 } }],
  policyChanges: [{ key: { agentAddress: 1 }, unique: true }],
  // Moved after every change of a kind that instances remember (src/store/changeMarks.ts).
  changeMarks: [{ key: { name: 1 }, unique: true }],
  // The facilitator's settlements broadcast and not yet confirmed (src/x402/pendingSettlements.ts), gone when expired.
  pendingSettlements: [
    { key: { key: 1 }, unique: true },
    { key: { expiresAt: 1 }, expireAfterSeconds: 0 },
  ],
};

export async function connectStore(uri: string, dbName: string, extraIndexes: typeof INDEXES = {}): Promise<Store> {
  // Polling monitoring: with the streaming protocol CongoDB made some operations wait ~500 ms for server selection.
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000, maxPoolSize: 50, serverMonitoringMode: "poll" });
  await client.connect();
  const db = client.db(dbName);
  const all = { ...INDEXES, ...extraIndexes };
  for (const [name, specs] of Object.entries(all)) {
    for (const spec of specs) {
      const options: { unique?: boolean; expireAfterSeconds?: number } = {};
      if (spec.unique) options.unique = true;
      if (spec.expireAfterSeconds !== undefined) options.expireAfterSeconds = spec.expireAfterSeconds;
      await db.collection(name).createIndex(spec.key, options);
    }
  }
  return {
    client,
    db,
    owners: db.collection<OwnerDoc>("owners"),
    apiKeys: db.collection<ApiKeyDoc>("apiKeys"),
    agents: db.collection<AgentDoc>("agents"),
    walletKeys: db.collection<WalletKeyDoc>("walletKeys"),
    policies: db.collection<PolicyDoc>("policies"),
    allowlists: db.collection<AllowlistDoc>("allowlists"),
    usedSignatures: db.collection<UsedSignatureDoc>("usedSignatures"),
    siweNonces: db.collection<SiweNonceDoc>("siweNonces"),
    payments: db.collection<PaymentDoc>("payments"),
    channels: db.collection<ChannelDoc>("channels"),
    approvals: db.collection<ApprovalDoc>("approvals"),
    idempotency: db.collection<IdempotencyDoc>("idempotency"),
    chainEvents: db.collection<ChainEventDoc>("chainEvents"),
    indexerState: db.collection<IndexerStateDoc>("indexerState"),
    collection: <T extends Document>(name: string) => db.collection<T>(name),
    ping: async () => {
      await db.command({ ping: 1 });
    },
    close: () => client.close(),
  };
}
