/**
 * The event-only audit: from the chain's logs alone (no calldata, no database) rebuild every payment decision, every
 * policy version with its signed timestamp, pauses, withdrawals and each day's spend, and find the same story as
 * GET /ledger tells.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { JsonRpcProvider, Wallet, ZeroAddress, getAddress } from "ethers";
import { ERC1271Wallet__factory, OperatorSet__factory } from "../../typechain-types";
import { auditFromLogs, type AuditAgent } from "../../src/audit/audit";
import { CONTRACT_OWNER, SignatureAuditor } from "../../src/audit/auditSignatures";
import { fetchLedger, ledgerDisagreements } from "../../src/audit/ledgerAudit";
import { LINK_AGENT_TYPES, SET_OPERATOR_TYPES, WITHDRAW_TYPES, policyDomain, serviceDomain } from "../../src/chain/typedData";
import { toBaseUnits } from "../../src/amounts";
import { auditOptions, auditOutput, auditStack, runAudit } from "../helpers/auditCli";
import { approvalDecision, inFlightEntry } from "../helpers/payments";
import { handOver, ownerKey, setOperatorOnChain } from "../helpers/owner";
import { fundedFacilitator, mintUsdc, startMisbehavingSeller, startV2Seller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";

const USDC = 1_000_000n;

describe("audit from events alone", () => {
  const { s, keep } = stackPerFile();

  it("rebuilds every decision, policy version, pause, withdrawal and day's spend, and matches GET /ledger", async () => {
    const facilitator = await fundedFacilitator(s);
    const cheap = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: USDC });
    const dear = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: 4n * USDC });
    const tooDear = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: 6n * USDC });
    const broken = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, price: USDC });
    keep(cheap, dear, tooDear, broken);
    const owner = randomOwner();
    const key = await ownerKey(s, owner);
    const policy = { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "3", allowlist: ["127.0.0.1"] };
    const a = await s.onboard(owner, policy);
    const b = await s.onboard(randomOwner(), policy);
    await mintUsdc(s, a.agentAddress, 50n * USDC);
    await mintUsdc(s, b.agentAddress, 50n * USDC);
    const pay = (agent: { agentAddress: string; apiKey: string }, url: string) =>
      s.api("POST", "/pay", {
        key: agent.apiKey,
        body: { agentAddress: agent.agentAddress, serviceUrl: url, maxAmount: "10", intent: "audit" },
      });

    expect((await pay(a, cheap.resource)).status).to.equal(200); // approved
    expect((await pay(a, tooDear.resource)).status).to.equal(422); // per_tx_limit_exceeded, on-chain
    expect((await pay(a, cheap.resource.replace("127.0.0.1", "localhost"))).status).to.equal(422); // merchant_not_allowed
    expect((await pay(a, broken.resource)).status).to.equal(502); // authorised, released
    const pending = await pay(a, dear.resource); // approval
    expect(pending.status).to.equal(202);
    const approve = await approvalDecision(
      s,
      owner,
      { id: pending.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "4" },
      "approve",
    );
    expect((await s.api("POST", `/approvals/${pending.body.approvalId}/approve`, { key, body: approve })).status).to.equal(200);
    const denied = await pay(a, dear.resource);
    const deny = await approvalDecision(
      s,
      owner,
      { id: denied.body.approvalId, agentAddress: a.agentAddress, merchant: "127.0.0.1", amount: "4" },
      "deny",
    );
    expect((await s.api("POST", `/approvals/${denied.body.approvalId}/deny`, { key, body: deny })).status).to.equal(200);
    const pauseBody = async (paused: boolean, timestamp: number) => {
      const { signature, epoch } = await s.signPause(owner, a.agentAddress, paused, timestamp);
      return { paused, epoch, humanSignature: signature, timestamp };
    };
    const pauseTs = s.now();
    expect((await s.api("POST", `/agents/${a.agentAddress}/pause`, { key, body: await pauseBody(true, pauseTs) })).status).to.equal(200);
    expect((await pay(a, cheap.resource)).body.reason).to.equal("policy_paused");
    // After the pause's own block time too (the contract keeps the later of the two): a chain a second ahead of the
    // wall clock would otherwise refuse the resume as stale.
    const resumeTs = Math.max(pauseTs, (await s.svc.chain.provider.getBlock("latest"))!.timestamp) + 1;
    const resumed = await s.api("POST", `/agents/${a.agentAddress}/pause`, { key, body: await pauseBody(false, resumeTs) });
    expect(resumed.status, JSON.stringify(resumed.body)).to.equal(200);
    const updateTs = s.now() + 2;
    const updated = await s.api("POST", "/limits", {
      key,
      body: await s.policyBody(
        owner,
        a.agentAddress,
        { ...policy, dailyBudget: "30", weeklyBudget: "100", maxPaymentsPerHour: 50 },
        updateTs,
      ),
    });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(201);
    const w = { agent: a.agentAddress, token: s.svc.config.usdcAddress, to: owner.address, amount: toBaseUnits("2.5"), timestamp: s.now() };
    const humanSignature = await owner.signTypedData(policyDomain(8453, a.agentAddress), WITHDRAW_TYPES, w);
    const withdrawn = await s.api("POST", `/agents/${a.agentAddress}/withdraw`, {
      key,
      body: { token: "USDC", to: owner.address, amount: "2.5", timestamp: w.timestamp, humanSignature },
    });
    expect(withdrawn.status, JSON.stringify(withdrawn.body)).to.equal(200);
    expect((await pay(b, cheap.resource)).status).to.equal(200);

    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal([]);
    const audited: AuditAgent = report.agents[a.agentAddress];
    expect(audited.owners.map((o) => o.owner)).to.deep.equal([getAddress(owner.address)]);
    expect(audited.policies.map((p) => [p.version, p.dailyBudget])).to.deep.equal([
      [1, "20000000"],
      [2, "30000000"],
    ]);
    expect(audited.policies[1].timestamp).to.equal(updateTs);
    expect(audited.policies.map((p) => [p.weeklyBudget, p.maxPaymentsPerHour, p.validUntil])).to.deep.equal([
      ["0", "0", "0"],
      ["100000000", "50", "0"],
    ]);
    expect(audited.pauses.map((p) => [p.paused, p.timestamp])).to.deep.equal([
      [true, pauseTs],
      [false, resumeTs],
    ]);
    expect(audited.withdrawals).to.deep.equal([
      {
        token: getAddress(s.svc.config.usdcAddress),
        to: getAddress(owner.address),
        amount: "2500000",
        timestamp: w.timestamp,
        txHash: withdrawn.body.txHash,
      },
    ]);

    for (const [agent, apiKey] of [
      [a.agentAddress, a.apiKey],
      [b.agentAddress, b.apiKey],
    ] as const) {
      const ledger = (await s.api("GET", `/ledger?address=${agent}&limit=200`, { key: apiKey })).body.transactions as Record<string, any>[];
      const onchain = report.agents[agent];
      const byId = new Map(onchain.payments.map((p) => [p.paymentId, p]));
      let matched = 0;
      for (const t of ledger) {
        const p = t.paymentId ? byId.get(t.paymentId) : undefined;
        if (t.status === "approved") {
          expect(p, t.id).to.include({
            status: "settled",
            amount: toBaseUnits(t.amount).toString(),
            payTo: t.payTo,
            settleTx: t.txHash,
            authorizeTx: t.authorizeTxHash,
          });
          matched++;
        } else if (t.status === "failed") {
          expect(p, t.id).to.include({ status: "released", releaseTx: t.releaseTxHash });
          matched++;
        } else if (t.status === "blocked" && t.txHash) {
          expect(
            onchain.blocked.some(
              (x) => x.authorizeTx === t.txHash && x.reason === t.reason && x.amount === toBaseUnits(t.amount).toString(),
            ),
            t.id,
          ).to.equal(true);
        } else {
          expect(p, `${t.id} (${t.status}) has nothing on-chain`).to.equal(undefined);
        }
      }
      // Nothing on-chain that the ledger does not know.
      expect(matched).to.equal(onchain.payments.length);
      const spent = await s.svc.chain.policyAt(agent, s.svc.chain.provider).spentToday();
      expect(Object.values(onchain.days).at(-1)).to.equal(spent.toString());
    }
    // The ledger as its owner reads it agrees with the chain (approvals, denials, refusals on-chain and off).
    expect(ledgerDisagreements(report, await fetchLedger(s.url, key), [a.agentAddress])).to.deep.equal([]);
    const ledgerA = (await s.api("GET", `/ledger?address=${a.agentAddress}`, { key: a.apiKey })).body.transactions as Record<string, any>[];
    expect(ledgerA.map((t) => t.status).sort()).to.deep.equal([
      "approved",
      "approved",
      "blocked",
      "blocked",
      "blocked",
      "denied",
      "failed",
    ]);
    const approvedByOwner = audited.payments.find((p) => p.approvalId === pending.body.approvalId);
    expect(approvedByOwner).to.include({ status: "settled", amount: "4000000" });

    // Every owner action's signer, recovered from its event's signature: the owner each time.
    expect(audited.signatures.map((x) => [x.event, x.signer, x.verdict])).to.deep.equal(
      ["PolicyUpdated", "ApprovalUsed", "PausedSet", "PausedSet", "PolicyUpdated", "Withdrawn"].map((e) => [e, owner.address, "owner"]),
    );
    // The epochs rebuilt from events alone: the first policy, the pause, the new policy (a resume starts none).
    expect(audited.epochs.map((x) => [x.epoch, x.cause])).to.deep.equal([
      [1, "PolicyUpdated"],
      [2, "PausedSet"],
      [3, "PolicyUpdated"],
    ]);
    expect(audited.epoch).to.equal(Number(await s.svc.chain.policyAt(a.agentAddress, s.svc.chain.provider).epoch()));
    // What each PausedSet signed: the pause names 0 (a pause takes any epoch), the resume the epoch the pause started.
    expect(audited.pauses.map((p) => p.epoch)).to.deep.equal([0, 2]);
    expect(audited.payments.every((p) => p.epoch === 1 && p.validAfter === 0 && p.leaf?.entry === "127.0.0.1")).to.equal(true);
    // Every USDC out of the wallet explained: the two settlements and the withdrawal.
    expect(audited.outflows.map((o) => [o.token, o.amount, o.explainedBy])).to.deep.equal([
      ["USDC", "1000000", "settlement"],
      ["USDC", "4000000", "settlement"],
      ["USDC", "2500000", "withdrawal"],
    ]);
    expect(audited.outflows[2]).to.include({ to: getAddress(owner.address), txHash: withdrawn.body.txHash });
    expect(audited.leaves).to.deep.equal([
      { entry: "127.0.0.1", dailyCap: "0", payee: ZeroAddress, payments: audited.payments.length, amount: "6000000", days: {} },
    ]);
    expect(audited.payees[getAddress(cheap.payTo)]).to.include({ payments: 1, amount: "1000000" });
    expect(audited.payees[getAddress(cheap.payTo)].namedBy).to.deep.equal([]);
  });

  it("a normal run with a pinned payee and a capped entry: npm run audit prints the rebuilt epochs, leaves and payees, exit 0", async () => {
    const facilitator = await fundedFacilitator(s);
    const seller = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: USDC });
    keep(seller);
    const owner = randomOwner();
    const key = await ownerKey(s, owner);
    const payTo = getAddress(seller.payTo);
    const a = await s.onboard(owner, {
      perTxLimit: "5",
      dailyBudget: "20",
      approvalThreshold: "5",
      allowlist: ["127.0.0.1"],
      merchantCaps: { "127.0.0.1": "3" },
      payees: { "127.0.0.1": payTo },
    });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const pay = async (status: number) => {
      const res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent: "audit summary" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(status);
      return res.body;
    };
    await pay(200);
    const pause = async (paused: boolean, timestamp: number) => {
      const { signature, epoch } = await s.signPause(owner, a.agentAddress, paused, timestamp);
      const res = await s.api("POST", `/agents/${a.agentAddress}/pause`, {
        key,
        body: { paused, epoch, humanSignature: signature, timestamp },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    };
    const ts = s.now();
    await pause(true, ts);
    await pause(false, Math.max(ts, (await s.svc.chain.provider.getBlock("latest"))!.timestamp) + 1);
    await pay(200);
    await pay(200);
    expect((await pay(422)).reason).to.equal("merchant_budget_exceeded"); // 3 USDC under the entry today

    const cli = await runAudit(s);
    expect(cli.code, cli.stderr).to.equal(0);
    const { report, summary } = auditOutput(cli.stdout);
    expect(summary).to.match(/^audit: \d+ agents, \d+ events, 0 anomalies/);
    expect(report.inconsistencies).to.deep.equal([]);
    const audited = report.agents[a.agentAddress];
    expect(audited.epochs.map((x) => [x.epoch, x.cause])).to.deep.equal([
      [1, "PolicyUpdated"],
      [2, "PausedSet"],
    ]);
    expect(audited.epoch).to.equal(2);
    expect(audited.payments.map((p) => [p.status, p.epoch, p.validAfter, p.leaf])).to.deep.equal([
      ["settled", 1, 0, { entry: "127.0.0.1", dailyCap: "3000000", payee: payTo }],
      ["settled", 2, 0, { entry: "127.0.0.1", dailyCap: "3000000", payee: payTo }],
      ["settled", 2, 0, { entry: "127.0.0.1", dailyCap: "3000000", payee: payTo }],
    ]);
    const today = audited.payments[0].day;
    expect(audited.leaves).to.deep.equal([
      { entry: "127.0.0.1", dailyCap: "3000000", payee: payTo, payments: 3, amount: "3000000", days: { [today]: "3000000" } },
    ]);
    expect(audited.payees).to.deep.equal({ [payTo]: { payments: 3, amount: "3000000", namedBy: ["127.0.0.1"] } });
    expect(audited.outflows.map((o) => [o.token, o.to, o.amount, o.explainedBy])).to.deep.equal(
      audited.payments.map(() => ["USDC", payTo, "1000000", "settlement"]),
    );
    expect(audited.signatures.map((x) => [x.event, x.verdict])).to.deep.equal([
      ["PolicyUpdated", "owner"],
      ["PausedSet", "owner"],
      ["PausedSet", "owner"],
    ]);
  });

  it("an ERC-1271 owner (a smart wallet): its signatures are noted as checked by the contract, no anomaly", async () => {
    const { chain } = s.svc;
    const deployer = Wallet.createRandom().connect(chain.provider);
    await chain.provider.send("hardhat_setBalance", [deployer.address, "0xde0b6b3a7640000"]);
    const signer = randomOwner();
    const wallet = await new ERC1271Wallet__factory(deployer).deploy(signer.address);
    await wallet.waitForDeployment();
    const owner = getAddress(await wallet.getAddress());
    const agent = await s.genesis();
    const ts = s.now();
    const ownerSignature = await signer.signTypedData(serviceDomain(8453), LINK_AGENT_TYPES, {
      agent: agent.agentAddress,
      owner,
      timestamp: ts,
    });
    const activationCode = new URL(s.activationPath(agent.agentAddress), "http://x").searchParams.get("code");
    const linked = await s.api("POST", "/agents/link", {
      body: { agentAddress: agent.agentAddress, ownerAddress: owner, ownerSignature, timestamp: ts, activationCode },
    });
    expect(linked.status, JSON.stringify(linked.body)).to.equal(200);
    const policy = { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "3", allowlist: ["127.0.0.1"] };
    const deployed = await s.api("POST", "/limits", { key: agent.apiKey, body: await s.policyBody(signer, agent.agentAddress, policy) });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(201);

    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal([]);
    const audited = report.agents[agent.agentAddress];
    // The wallet's key recovers, not the wallet: the contract checked it by ERC-1271 when it accepted the policy.
    expect(audited.signatures.map((x) => [x.event, x.signer, x.owner, x.verdict])).to.deep.equal([
      ["PolicyUpdated", signer.address, owner, CONTRACT_OWNER],
    ]);
    expect(report.notes.filter((n) => n.startsWith(agent.agentAddress))).to.deep.equal([
      `${agent.agentAddress}: PolicyUpdated in ${audited.policies[0].txHash}: ${CONTRACT_OWNER} (owner ${owner})`,
    ]);
  });

  it("an owner action signed by another key than the owner in force: 'not the owner' (the check the audit applies to every one)", async () => {
    const { chain } = s.svc;
    const owner = randomOwner();
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"] });
    const auditor = new SignatureAuditor(chain.provider, s.svc.config.chainId);
    const message = { agent: a.agentAddress, operator: chain.operator.address, timestamp: 1n };
    const domain = policyDomain(s.svc.config.chainId, a.agentAddress);
    const mine = await owner.signTypedData(domain, SET_OPERATOR_TYPES, message);
    const stranger = randomOwner();
    const theirs = await stranger.signTypedData(domain, SET_OPERATOR_TYPES, message);
    const check = (signature: string) => auditor.check(a.agentAddress, getAddress(owner.address), "OperatorSet", message, signature, "0x");
    expect(await check(mine)).to.include({ signer: owner.address, verdict: "owner" });
    expect(await check(theirs)).to.include({ signer: stranger.address, verdict: "not the owner" });
    expect(await check("0x1234")).to.include({ signer: null, verdict: "not the owner" });
  });

  it("follows the owner through a hand-over: OwnerSet signed by the previous owner, the heir's pause by the heir", async () => {
    const owner = randomOwner();
    const heir = randomOwner();
    const a = await s.onboard(owner, { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "3", allowlist: ["127.0.0.1"] });
    const key = await ownerKey(s, owner);
    // The indexer past the deployment's OwnerSet first: a run that links it after the hand-over gives the agent back
    // to the first owner until the next run (ledgerLinks followOwner reads only up to that event's block).
    await s.svc.indexer.syncOnce();
    const handedOver = await handOver(s, owner, a.agentAddress, heir.address, key);
    expect(handedOver.status, JSON.stringify(handedOver.body)).to.equal(200);
    const heirKey = await ownerKey(s, heir);
    const pause = await s.signPause(heir, a.agentAddress, true);
    const paused = await s.api("POST", `/agents/${a.agentAddress}/pause`, {
      key: heirKey,
      body: { paused: true, epoch: pause.epoch, humanSignature: pause.signature, timestamp: pause.timestamp },
    });
    expect(paused.status, JSON.stringify(paused.body)).to.equal(200);

    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal([]);
    const audited = report.agents[a.agentAddress];
    expect(audited.owners.map((o) => o.owner)).to.deep.equal([owner.address, heir.address]);
    expect(audited.signatures.map((x) => [x.event, x.signer, x.owner, x.verdict])).to.deep.equal([
      ["PolicyUpdated", owner.address, owner.address, "owner"],
      ["OwnerSet", owner.address, owner.address, "owner"],
      ["PausedSet", heir.address, heir.address, "owner"],
    ]);
    expect(audited.epochs.map((x) => [x.epoch, x.cause])).to.deep.equal([
      [1, "PolicyUpdated"],
      [2, "OwnerSet"],
      [3, "PausedSet"],
    ]);
    expect(audited.epoch).to.equal(Number(await s.svc.chain.policyAt(a.agentAddress, s.svc.chain.provider).epoch()));
  });

  it("lists a paymentId recovery voided (PaymentVoided) apart from every authorised payment, consistently", async () => {
    const c = await s.onboard(randomOwner(), { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "3", allowlist: ["127.0.0.1"] });
    const txnId = `txn_${randomBytes(12).toString("hex")}`;
    const paymentId = "0x" + randomBytes(32).toString("hex");
    // What a run killed between its commit and its authorisation leaves, its lease run out.
    await s.svc.store.payments.insertOne(
      inFlightEntry(txnId, c, USDC, { paymentId, leaseUntil: new Date(Date.now() - 1), instanceId: "gone" }),
    );
    expect(await s.svc.services.payments.recover()).to.equal(1);
    const doc = (await s.svc.store.payments.findOne({ txnId }))!;
    expect(doc).to.include({ status: "failed", reason: "not_authorized" });
    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal([]);
    const audited = report.agents[c.agentAddress];
    expect(audited.payments).to.deep.equal([]);
    expect(audited.voided.map((v) => [v.paymentId, v.txHash])).to.deep.equal([[paymentId, doc.voidTxHash]]);
  });

  it("follows an OperatorSet an owner made the operator: its owner and every member added or removed", async () => {
    const { chain } = s.svc;
    const owner = randomOwner();
    const c = await s.onboard(owner, { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "3", allowlist: ["127.0.0.1"] });
    const setOwner = Wallet.createRandom().connect(chain.provider);
    await chain.provider.send("hardhat_setBalance", [setOwner.address, "0xde0b6b3a7640000"]);
    const set = await new OperatorSet__factory(setOwner).deploy(setOwner.address, [chain.operator.address]);
    await set.waitForDeployment();
    const setAddress = getAddress(await set.getAddress());
    await setOperatorOnChain(s, owner, c.policyContract, setAddress);
    // A key let in and taken out again: it could have relayed for the agent in between.
    const intruder = Wallet.createRandom().address;
    const added = await (await set.addOperator(intruder)).wait();
    const removed = await (await set.removeOperator(intruder)).wait();

    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal([]);
    expect(report.agents[c.agentAddress].operators.map((o) => o.operator)).to.deep.equal([chain.operator.address, setAddress]);
    const audited = report.operatorSets[setAddress];
    expect(audited.owners.map((o) => o.owner)).to.deep.equal([setOwner.address]);
    expect(audited.changes.map((x) => [x.member, x.added, x.txHash])).to.deep.equal([
      [chain.operator.address, true, set.deploymentTransaction()!.hash],
      [intruder, true, added!.hash],
      [intruder, false, removed!.hash],
    ]);
    expect(audited.members).to.deep.equal([chain.operator.address]);
  });

  it("audits through a node that caps eth_getLogs ranges (as Base nodes do): the same report, no failure", async () => {
    const opts = auditOptions(s);
    const full = await auditFromLogs(s.svc.chain.provider, opts);
    expect(full.toBlock - full.fromBlock).to.be.greaterThan(MAX_LOG_BLOCKS);
    const capped = new CappedLogsProvider(s.svc.config.rpcUrl);
    try {
      const report = await auditFromLogs(capped, { ...opts, toBlock: full.toBlock });
      expect(report).to.deep.equal(full);
      expect(capped.refused).to.be.greaterThan(0);
    } finally {
      capped.destroy();
    }
  });

  it("audits many agents through a node that caps the addresses and topics of one eth_getLogs", async () => {
    const opts = auditOptions(s);
    const full = await auditFromLogs(s.svc.chain.provider, opts);
    expect(Object.keys(full.agents).length).to.be.greaterThan(3);
    const capped = new CappedLogsProvider(s.svc.config.rpcUrl, 5);
    try {
      const report = await auditFromLogs(capped, { ...opts, toBlock: full.toBlock, addressChunk: 2 });
      expect(report).to.deep.equal(full);
    } finally {
      capped.destroy();
    }
  });
});

const MAX_LOG_BLOCKS = 10;

/** A node that refuses eth_getLogs over more than MAX_LOG_BLOCKS blocks, with a provider's message. */
class CappedLogsProvider extends JsonRpcProvider {
  refused = 0;
  constructor(
    url: string,
    private readonly maxParams = Infinity,
  ) {
    super(url);
  }
  override send(method: string, params: unknown[]): Promise<any> {
    if (method === "eth_getLogs") {
      const { fromBlock, toBlock, address, topics } = params[0] as {
        fromBlock: string;
        toBlock: string;
        address?: unknown;
        topics?: unknown[];
      };
      // Infura counts the addresses and topics of one request (at most 5,000).
      if ([address, ...(topics ?? [])].flat().filter(Boolean).length > this.maxParams) {
        this.refused++;
        return Promise.reject(new Error(`A maximum of ${this.maxParams} parameters in a single request`));
      }
      if (Number(toBlock) - Number(fromBlock) + 1 > MAX_LOG_BLOCKS) {
        this.refused++;
        return Promise.reject(new Error(`eth_getLogs is limited to a ${MAX_LOG_BLOCKS} block range`));
      }
    }
    return super.send(method, params);
  }
}
