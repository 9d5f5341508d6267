/**
 * The indexer tests' shared set-up: the real stack (embedded Hardhat chain, CongoDB, the service booted over HTTP)
 * with one onboarded agent, booted once per test file by useIndexerStack(). The service's own polling loop is stopped
 * in `before`; every run in these tests is an explicit syncOnce(), so nothing waits on a timer.
 */
import { randomBytes } from "node:crypto";
import { Contract, Wallet, getAddress, type TransactionReceipt } from "ethers";
import pino from "pino";
import { Writable } from "node:stream";
import { Indexer } from "../../src/indexer/indexer";
import { connectStore, type Store } from "../../src/store";
import type { PaymentDoc } from "../../src/store/documents";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/typedData";
import { walletPayer } from "../../src/x402/buyer";
import { NO_LEAF, leafStruct, normalizeAllowlist, proveMerchant } from "../../src/policy/allowlist";
import { startStack, randomOwner, type Stack } from "./stack";
import { ledgerEntry as newLedgerEntry } from "../../src/payments/phases";

export const NO_APPROVAL = { approvalId: "", amount: 0, timestamp: 0, signature: "0x" };
export const ALLOWLIST = normalizeAllowlist(["127.0.0.1", "localhost"]).entries;
const USDC_EIP3009_ABI = [
  "function mint(address to, uint256 amount) returns (bool)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
];

export const randomId = () => "0x" + randomBytes(32).toString("hex");
/** The one transfer an authorised payment lets settle (v2: authorizePayment binds payTo, amount and expiry). */
export const transferOf = (amount: bigint, payTo = PAY_TO) => ({
  payTo,
  amount,
  validAfter: 0n,
  validBefore: BigInt(Math.floor(Date.now() / 1000) + 600),
});
export const PAY_TO = Wallet.createRandom().address;

export function quietLogger(lines: string[] = []) {
  return pino(
    { level: "debug" },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    }),
  );
}

export interface IndexerAgent {
  agentAddress: string;
  apiKey: string;
  policyContract: string;
}

/** Registers the file's `before` and `after` hooks and returns the stack's handles and builders. */
export function useIndexerStack() {
  let s: Stack;
  let owner: Wallet;
  let agent: IndexerAgent;
  const extraStores: Store[] = [];

  before(async () => {
    s = await startStack();
    await s.svc.indexer.stop(); // runs below are explicit
    owner = randomOwner();
    agent = await s.onboard(owner, { perTxLimit: "5", dailyBudget: "1000", approvalThreshold: "2" });
  });
  after(async () => {
    for (const st of extraStores) await st.close().catch(() => undefined);
    await s?.close();
  });

  const chain = () => s.svc.chain;
  const store = () => s.svc.store;
  const rpc = (method: string, params: unknown[] = []) => chain().provider.send(method, params);

  /** A fresh database on the same CongoDB server, for an indexer with other settings. */
  async function freshStore(): Promise<Store> {
    const st = await connectStore(s.svc.embeddedMongo!.uri, `idx_${randomBytes(4).toString("hex")}`);
    extraStores.push(st);
    return st;
  }

  function indexer(over: Partial<ConstructorParameters<typeof Indexer>[0]> = {}): Indexer {
    return new Indexer({
      chain: chain(),
      store: store(),
      chainId: s.svc.config.chainId,
      confirmations: 0,
      startBlock: s.svc.config.factoryDeployBlock,
      logger: quietLogger(),
      ...over,
    });
  }

  const transfers = new Map<string, ReturnType<typeof transferOf>>();

  /** authorizePayment straight from the operator (nonce-serialised with the service's own sends). */
  async function authorize(
    policy: string,
    paymentId: string,
    amount: bigint,
    merchant = "localhost",
    payTo = PAY_TO,
  ): Promise<TransactionReceipt> {
    const proof = proveMerchant(ALLOWLIST, merchant) ?? { ...NO_LEAF, leaf: "localhost" };
    const c = chain().policyAt(policy);
    const transfer = transferOf(amount, payTo);
    transfers.set(paymentId, transfer);
    const { receipt } = await chain().sendAndWait((o) =>
      c.authorizePayment(paymentId, merchant, leafStruct(proof), proof.proof, transfer, NO_APPROVAL, o),
    );
    return receipt;
  }

  async function release(policy: string, paymentId: string): Promise<TransactionReceipt> {
    const c = chain().policyAt(policy);
    return (await chain().sendAndWait((o) => c.releasePayment(paymentId, transfers.get(paymentId)!, o))).receipt;
  }

  async function fundedWallet(): Promise<Wallet> {
    const w = Wallet.createRandom().connect(chain().provider) as unknown as Wallet;
    await rpc("hardhat_setBalance", [w.address, "0x" + (10n ** 20n).toString(16)]);
    return w;
  }

  /** A ledger entry as the payment service writes it (only the fields the indexer reads matter). */
  function ledgerEntry(over: Partial<PaymentDoc>): PaymentDoc {
    const base = {
      agentAddress: agent.agentAddress,
      ownerAddress: owner.address,
      policyAddress: agent.policyContract,
      merchant: "localhost",
      serviceUrl: "http://localhost/x",
      currency: "USDC" as const,
      intent: "indexer test",
      approvalId: null,
    };
    return {
      ...newLedgerEntry("txn_" + randomBytes(8).toString("hex"), base, { amount: "1", status: "processing", phase: "authorizing" }),
      ...(over as object),
    };
  }

  /**
   * The agent wallet's EIP-3009 transfer, authorised by its policy and signed with its custodied key (the wallet's
   * ERC-1271 format), as a raw transaction from `relayer`.
   */
  async function signedTransfer(relayer: Wallet, nonce: string, value = 1n): Promise<string> {
    const usdc = new Contract(chain().usdc.target, USDC_EIP3009_ABI, relayer);
    await (await usdc.mint(agent.agentAddress, 1_000_000n)).wait();
    await authorize(agent.policyContract, nonce, value, "localhost", relayer.address);
    const { validAfter, validBefore } = transfers.get(nonce)!;
    const doc = (await store().agents.findOne({ address: agent.agentAddress }))!;
    const signer = walletPayer(agent.agentAddress, await s.svc.services.ctx.wallets.signer(doc.signerAddress));
    const message = { from: agent.agentAddress, to: relayer.address, value, validAfter, validBefore, nonce };
    const signature = await signer.signTypedData({
      domain: { name: "USD Coin", version: "2", chainId: s.svc.config.chainId, verifyingContract: getAddress(usdc.target as string) },
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message,
    });
    const tx = await usdc.transferWithAuthorization.populateTransaction(
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      nonce,
      signature,
    );
    return relayer.signTransaction(await relayer.populateTransaction({ ...tx, gasLimit: 200_000n }));
  }

  return {
    get s() {
      return s;
    },
    get owner() {
      return owner;
    },
    get agent() {
      return agent;
    },
    chain,
    store,
    rpc,
    freshStore,
    indexer,
    transfers,
    authorize,
    release,
    fundedWallet,
    ledgerEntry,
    signedTransfer,
  };
}
