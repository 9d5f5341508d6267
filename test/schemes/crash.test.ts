/**
 * Kill -9 at each write boundary of a voucher (and of an exact payment's authorised mark): the service runs as its own
 * process on a store whose writes the test can trap (test/helpers/killedService.ts), pays a stock batch-settlement
 * seller (its state survives the kill, as a real seller's does), is killed at the boundary, and is started again under
 * the same INSTANCE_ID. Then one more voucher, the interrupted request retried with its Idempotency-Key, and the seller
 * claims everything it counted: nothing is lost, nothing is counted twice, the ledger's approved sum equals the
 * seller's claimed total, and the interrupted key answers what the ledger says.
 */
import { expect } from "chai";
import { Contract, JsonRpcProvider, Wallet } from "ethers";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { toBaseUnits } from "../../src/amounts";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { connectStore } from "../../src/store";
import { fundAgents, onboardAgent, type ClusterAgent } from "../../scripts/cluster/client";
import {
  type ServiceProcess,
  type StoreWrite,
  type TappedStore,
  processEnv,
  spawnService,
  startTappedStore,
} from "../helpers/killedService";
import {
  type BatchSeller,
  type StockFacilitator,
  startBatchSeller,
  startExactSeller,
  stockSchemeFacilitator,
} from "../helpers/schemeSellers";

const PRICE = 1_000n; // 0.001 USDC a request

/** The first update of a write command (update: its first statement). */
const updateOf = (w: StoreWrite): Record<string, any> | undefined =>
  w.name === "update" ? (w.command.updates as { u: Record<string, any> }[] | undefined)?.[0]?.u : undefined;
/** A voucher's record: the channel write that moves its sequence and records it (vouchers.ts). */
const voucherRecorded = (w: StoreWrite) => w.collection === "channels" && (updateOf(w)?.$set?.unsettled?.length ?? 0) > 0;
/** A voucher's outcome: its ledger entry, written once. */
const voucherOutcome = (w: StoreWrite) =>
  w.collection === "payments" && updateOf(w)?.$setOnInsert?.scheme === "batch-settlement" && updateOf(w)?.$setOnInsert?.phase === "done";
/** An exact payment's authorised mark, with its authorisation's hash (authorize.ts). */
const authorisedMark = (w: StoreWrite) => w.collection === "payments" && updateOf(w)?.$set?.phase === "authorized";

describe("kill -9 at a payment's write boundaries", function () {
  this.timeout(300_000);
  let chain: EmbeddedChain;
  let store: TappedStore;
  let provider: JsonRpcProvider;
  let facilitator: StockFacilitator;
  let env: Record<string, string>;
  const running: ServiceProcess[] = [];
  const sellers: BatchSeller[] = [];

  before(async () => {
    chain = await startEmbeddedChain();
    store = await startTappedStore();
    provider = new JsonRpcProvider(chain.rpcUrl, 8453, { staticNetwork: true, cacheTimeout: -1 });
    const key = Wallet.createRandom();
    await provider.send("hardhat_setBalance", [key.address, `0x${(10n ** 21n).toString(16)}`]);
    facilitator = stockSchemeFacilitator(chain.rpcUrl, key.privateKey);
    env = {
      ...processEnv(chain, store.uri, "crash"),
      // The restarted process has the killed one's id: what that one left in flight is its own, resolved at start-up.
      INSTANCE_ID: "crash-test",
      CHANNEL_DEPOSIT_REQUESTS: "100",
    };
  });
  afterEach(async function () {
    if (this.currentTest?.state === "failed") for (const s of running) console.log(s.output());
    for (const s of running.splice(0)) await s.kill();
    for (const s of sellers.splice(0)) await s.close();
  });
  after(async () => {
    provider?.destroy();
    await store?.stop();
    await chain?.close();
  });

  async function start(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    const svc = await spawnService({ ...env, ...extra });
    running.push(svc);
    return svc;
  }

  async function killed(svc: ServiceProcess): Promise<void> {
    running.splice(running.indexOf(svc), 1);
    await svc.kill();
  }

  async function pay(svc: ServiceProcess, a: ClusterAgent, seller: { resource: string }, key?: string) {
    const res = await fetch(`${svc.url}/pay`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Authorization: `Bearer ${a.apiKey}`,
        ...(key ? { "Idempotency-Key": key } : {}),
      },
      body: JSON.stringify({ agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "0.01", intent: "crash test" }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any>, replayed: res.headers.get("Idempotent-Replayed") };
  }

  /** A new agent with a channel to a new seller: its deposit (with the first voucher) and two more vouchers paid. */
  async function agentWithChannel(svc: ServiceProcess): Promise<{ a: ClusterAgent; seller: BatchSeller }> {
    const a = await onboardAgent(svc.url, 8453, { perTxLimit: "1", dailyBudget: "100", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await fundAgents(chain.rpcUrl, chain.addresses.usdc, [a.agentAddress], 10_000_000n);
    const seller = await startBatchSeller({ facilitator: facilitator.client, usdc: chain.addresses.usdc, price: PRICE });
    sellers.push(seller);
    for (const key of ["first", "second", "third"]) {
      const res = await pay(svc, a, seller, key);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
    return { a, seller };
  }

  async function ledgerOf(svc: ServiceProcess, a: ClusterAgent): Promise<Record<string, any>[]> {
    const res = await fetch(`${svc.url}/ledger?address=${a.agentAddress}&limit=200`, { headers: { Authorization: `Bearer ${a.apiKey}` } });
    return ((await res.json()) as { transactions: Record<string, any>[] }).transactions;
  }

  /**
   * After the restart: one more voucher, the interrupted key's answer against its ledger entry, then the seller claims
   * all it counted. The ledger's approved sum is the seller's claimed total; every voucher the seller counted is
   * approved once; nothing is left in flight.
   */
  async function expectAgreement(svc: ServiceProcess, a: ClusterAgent, seller: BatchSeller, interrupted: string) {
    const next = await pay(svc, a, seller);
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
    const again = await pay(svc, a, seller, interrupted);
    const entries = await ledgerOf(svc, a);
    const channelId = next.body.channel.channelId as string;
    const approved = entries.filter((e) => e.status === "approved" && e.scheme === "batch-settlement");
    const processing = entries.filter((e) => e.status === "processing");
    expect(processing, "nothing left in flight").to.deep.equal([]);
    const cumulatives = approved.map((e) => e.channel.cumulative as string);
    expect(new Set(cumulatives).size, "no voucher counted twice").to.equal(cumulatives.length);
    await seller.manager.claimAndSettle();
    const channels = new Contract(
      BATCH_SETTLEMENT_ADDRESS,
      ["function channels(bytes32) view returns (uint128 balance, uint128 totalClaimed)"],
      provider,
    );
    const [, totalClaimed] = (await channels.channels(channelId)) as [bigint, bigint];
    const sum = approved.reduce((n, e) => n + toBaseUnits(e.amount as string), 0n);
    expect(sum, "the ledger's approved sum is the seller's claimed total").to.equal(totalClaimed);
    expect(totalClaimed % PRICE).to.equal(0n);
    // The interrupted request's answer is the ledger's: approved with its entry, or failed as its entry says.
    if (again.status === 200) {
      const entry = entries.find((e) => e.id === again.body.transactionId);
      expect(entry, "the key's answer names a ledger entry").to.not.equal(undefined);
      expect(entry).to.include({ status: "approved", amount: again.body.amount });
    } else {
      expect(again.status, JSON.stringify(again.body)).to.equal(502);
      expect(again.body.message).to.not.match(/nothing was paid/);
      const entry = entries.find((e) => e.id === again.body.details?.transactionId);
      expect(entry, "the key's answer names a ledger entry").to.not.equal(undefined);
      expect(entry!.status).to.equal("failed");
    }
    return again;
  }

  /** Kills `svc` while the voucher of a payment with key "interrupted" is at the seller, which counted it. */
  async function killedAtTheSeller(svc: ServiceProcess, a: ClusterAgent, seller: BatchSeller): Promise<void> {
    let wake: () => void = () => undefined;
    const counted = seller.holdAfterSettlement(new Promise<void>((r) => (wake = r)));
    const interrupted = pay(svc, a, seller, "interrupted").catch(() => null);
    await counted;
    await killed(svc);
    wake();
    await interrupted;
  }

  it("a voucher at the seller when the service died: the seller counted it, and after the restart it is approved", async () => {
    const svc = await start();
    const { a, seller } = await agentWithChannel(svc);
    await killedAtTheSeller(svc, a, seller);
    const again = await expectAgreement(await start(), a, seller, "interrupted");
    expect(again.status, "counted by the seller: approved").to.equal(200);
  });

  it("a voucher at the seller when the service died, claimed on-chain before the restart: approved from the claim at start-up", async () => {
    const svc = await start();
    const { a, seller } = await agentWithChannel(svc);
    await killedAtTheSeller(svc, a, seller);
    await seller.manager.claimAndSettle();
    const restarted = await start();
    // Settled by recovery at start-up, from the seller's claim: its key answers with no other payment first.
    const answered = await pay(restarted, a, seller, "interrupted");
    expect(answered.status, JSON.stringify(answered.body)).to.equal(200);
    expect(answered.replayed, "the payment's own answer, not a new payment").to.equal("true");
    await expectAgreement(restarted, a, seller, "interrupted");
  });

  /** Kills `svc` at the first write `match` accepts during a voucher paid with key "interrupted"; the restarted service. */
  async function killedAt(
    svc: ServiceProcess,
    a: ClusterAgent,
    seller: BatchSeller,
    match: (w: StoreWrite) => boolean,
    when: "before" | "after",
    extra: Record<string, string> = {},
  ) {
    const trapped = store.trap(match, when, () => svc.child.kill("SIGKILL"));
    const interrupted = pay(svc, a, seller, "interrupted").catch(() => null);
    await trapped;
    await killed(svc);
    await interrupted;
    return start(extra);
  }

  it("killed once a voucher's record is written, before it leaves: the seller never counted it, and it is failed", async () => {
    const svc = await start();
    const { a, seller } = await agentWithChannel(svc);
    const restarted = await killedAt(svc, a, seller, voucherRecorded, "after");
    expect(seller.settlements).to.have.length(3);
    const again = await expectAgreement(restarted, a, seller, "interrupted");
    // The voucher was failed by the seller's corrective 402; its key, to which nothing was committed yet, paid anew.
    const db = await connectStore(store.uri, env.MONGODB_DB);
    const lost = await db.payments.find({ agentAddress: a.agentAddress, detail: /did not count/ }).toArray();
    await db.close();
    expect(lost.map((e) => e.status)).to.deep.equal(["failed"]);
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body.transactionId).to.not.equal(lost[0].txnId);
  });

  it("killed once a voucher's record is written, the channel then spent: the seller's 402 to the top-up settles it, and the next pays", async () => {
    // Deposits of 4 requests: the first and three vouchers spend 3 of them, the interrupted one the 4th.
    const small = { CHANNEL_DEPOSIT_REQUESTS: "4" };
    const svc = await start(small);
    const { a, seller } = await agentWithChannel(svc);
    const restarted = await killedAt(svc, a, seller, voucherRecorded, "after", small);
    // Counting the voucher in doubt the channel is spent: the top-up's voucher names a base the seller corrects (it
    // never counted that voucher), nothing lands, and the channel's charge is the seller's from then on.
    const topUp = await pay(restarted, a, seller);
    expect(topUp.status, JSON.stringify(topUp.body)).to.equal(502);
    const again = await expectAgreement(restarted, a, seller, "interrupted");
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
  });

  it("killed after the seller answered, before the voucher's outcome is written: counted, and approved", async () => {
    const svc = await start();
    const { a, seller } = await agentWithChannel(svc);
    const restarted = await killedAt(svc, a, seller, voucherOutcome, "before");
    expect(seller.settlements, "the seller counted it").to.have.length(4);
    const again = await expectAgreement(restarted, a, seller, "interrupted");
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
  });

  it("killed once the voucher's outcome is written, before the channel's charge is: counted once, and approved", async () => {
    const svc = await start();
    const { a, seller } = await agentWithChannel(svc);
    const restarted = await killedAt(svc, a, seller, voucherOutcome, "after");
    const again = await expectAgreement(restarted, a, seller, "interrupted");
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
  });

  it("an exact payment killed once authorised on-chain, before its authorised mark with the hash: released, failed, its key says so", async () => {
    const svc = await start();
    const a = await onboardAgent(svc.url, 8453, { perTxLimit: "1", dailyBudget: "100", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await fundAgents(chain.rpcUrl, chain.addresses.usdc, [a.agentAddress], 10_000_000n);
    const seller = await startExactSeller({ facilitator: facilitator.client, usdc: chain.addresses.usdc, price: 10_000n });
    sellers.push(seller as BatchSeller);
    expect((await pay(svc, a, seller, "paid")).status).to.equal(200);
    const trapped = store.trap(authorisedMark, "before", () => svc.child.kill("SIGKILL"));
    const interrupted = pay(svc, a, seller, "interrupted").catch(() => null);
    await trapped;
    await killed(svc);
    await interrupted;
    const restarted = await start();
    const again = await pay(restarted, a, seller, "interrupted");
    expect(again.status, JSON.stringify(again.body)).to.equal(502);
    expect(again.body.message).to.match(/released on-chain/);
    const entries = await ledgerOf(restarted, a);
    const entry = entries.find((e) => e.id === again.body.details.transactionId);
    expect(entry).to.include({ status: "failed" });
    expect(entry!.authorizeTxHash, "the hash the kill kept from the entry: the recovery found the authorisation").to.equal(null);
    expect(entries.filter((e) => e.status === "approved")).to.have.length(1);
    expect(seller.settlements, "only the first payment reached the seller").to.have.length(1);
    const policy = new Contract(a.agentAddress, ["function spentToday() view returns (uint256)"], provider);
    expect(await policy.spentToday(), "the interrupted payment's budget released").to.equal(10_000n);
  });
});
