/**
 * The ledger against the chain: what a stolen server could rewrite in its own database (an amount, a status, a
 * settlement moved to another payment, entries dropped) is told apart from the chain's events, through GET /ledger
 * as an owner reads it, and by `npm run audit -- --ledger`.
 */
import { expect } from "chai";
import { fetchLedger, ledgerDisagreements } from "../../src/audit/ledgerAudit";
import { auditOutput, auditStack, runAudit } from "../helpers/auditCli";
import { ownerKey } from "../helpers/owner";
import { fundedFacilitator, mintUsdc, startMisbehavingSeller, startV2Seller } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";

const USDC = 1_000_000n;

describe("audit: the ledger against the chain", () => {
  const { s, keep } = stackPerFile();

  it("agrees with an untouched ledger, and names each entry a stolen database rewrote or dropped", async () => {
    const facilitator = await fundedFacilitator(s);
    const cheap = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: USDC });
    const tooDear = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: 6n * USDC });
    const broken = await startMisbehavingSeller("failAfterPayment", { usdc: s.svc.config.usdcAddress, price: USDC });
    keep(cheap, tooDear, broken);
    const owner = randomOwner();
    const key = await ownerKey(s, owner);
    const a = await s.onboard(owner, { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "5", allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 50n * USDC);
    const pay = async (url: string, status: number) => {
      const res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: url, maxAmount: "10", intent: "ledger audit" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(status);
      return res.body.transactionId as string;
    };
    const [one, two, three] = [await pay(cheap.resource, 200), await pay(cheap.resource, 200), await pay(cheap.resource, 200)];
    const blocked = await pay(tooDear.resource, 422); // PaymentBlocked on-chain
    await pay(broken.resource, 502); // authorised, then released
    const failed = (await s.svc.store.payments.findOne({ agentAddress: a.agentAddress, status: "failed" }))!.txnId;

    const report = await auditStack(s);
    expect(report.inconsistencies).to.deep.equal([]);
    expect(ledgerDisagreements(report, await fetchLedger(s.url, key))).to.deep.equal([]);

    const { payments } = s.svc.store;
    const doc = async (txnId: string) => (await payments.findOne({ txnId }))!;
    const first = await doc(one);
    const thirdPaymentId = (await doc(three)).paymentId!;
    await payments.updateOne({ txnId: one }, { $set: { amount: "700000" } });
    await payments.updateOne({ txnId: two }, { $set: { status: "failed", reason: "seller_error" } });
    // The third settlement told as the first one again (its own payment then has no entry).
    const moved = { paymentId: first.paymentId, txHash: first.txHash, authorizeTxHash: first.authorizeTxHash, payTo: first.payTo };
    await payments.updateOne({ txnId: three }, { $set: moved });
    await payments.deleteOne({ txnId: blocked });
    await payments.deleteOne({ txnId: failed });

    const problems = ledgerDisagreements(report, await fetchLedger(s.url, key));
    const lines = (re: RegExp) => problems.filter((p) => re.test(p));
    expect(lines(new RegExp(`^${one} .*: amount 700000, authorised on-chain 1000000$`)), problems.join("\n")).to.have.length(1);
    expect(lines(new RegExp(`^${two} .*: payment .* is settled on-chain$`))).to.have.length(1);
    // Which of the two entries is the false one the chain cannot say; the line names both.
    expect(
      lines(new RegExp(`^(${one}|${three}) .*: payment ${first.paymentId} is also the settlement of (${one}|${three})$`)),
    ).to.have.length(1);
    expect(lines(new RegExp(`^${a.agentAddress}: settled payment ${thirdPaymentId} \\(1000000\\) is not in the ledger$`))).to.have.length(
      1,
    );
    expect(lines(/: per_tx_limit_exceeded refusal of 6000000 in 0x[0-9a-f]{64} is not in the ledger$/)).to.have.length(1);
    expect(lines(/: released payment 0x[0-9a-f]{64} \(1000000\) is not in the ledger$/)).to.have.length(1);
    expect(problems).to.have.length(6);

    // The same from the command line an auditor runs: exit code 1, the disagreements in its JSON.
    const cli = await runAudit(s, { key });
    expect(cli.code, cli.stderr).to.equal(1);
    const { report: printed, summary } = auditOutput(cli.stdout);
    expect(printed.ledgerDisagreements).to.have.members(problems);
    expect(summary).to.match(
      new RegExp(`^audit: \\d+ agents, \\d+ events, ${problems.length} anomalies \\(0 on-chain, ${problems.length} in the ledger\\)`),
    );

    // A refusal mined after the ledger was read (its entry is written after its block): not a disagreement then.
    const ledgerBlock = await s.svc.chain.provider.getBlockNumber();
    const snapshot = await fetchLedger(s.url, key);
    await pay(tooDear.resource, 422);
    const later = await auditStack(s);
    expect(ledgerDisagreements(later, snapshot, [], ledgerBlock)).to.have.members(problems);
    expect(ledgerDisagreements(later, snapshot)).to.have.length(problems.length + 1);
  });

  it("refusals of different amounts within one minute each keep their own on-chain record: audit --ledger exits 0", async () => {
    const facilitator = await fundedFacilitator(s);
    const six = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: 6n * USDC });
    const seven = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: 7n * USDC });
    keep(six, seven);
    const owner = randomOwner();
    const key = await ownerKey(s, owner);
    const a = await s.onboard(owner, { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "5", allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 50n * USDC);
    const refuse = async (url: string) => {
      const res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: url, maxAmount: "10", intent: "refused" },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      expect(res.body.reason).to.equal("per_tx_limit_exceeded");
      return (await s.svc.store.payments.findOne({ txnId: res.body.transactionId as string }))!;
    };
    // Same merchant (127.0.0.1), same reason, within a minute: 6 then 7 USDC, then 7 again.
    const first = await refuse(six.resource);
    const second = await refuse(seven.resource);
    const again = await refuse(seven.resource);
    expect(first.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(second.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(second.txHash).to.not.equal(first.txHash); // another amount: its own PaymentBlocked
    expect(again).to.include({ txHash: second.txHash, duplicateOf: second.txnId }); // identical: shared

    const blocked = (await auditStack(s)).agents[a.agentAddress].blocked;
    expect(blocked.map((b) => [b.amount, b.reason, b.authorizeTx])).to.deep.equal([
      ["6000000", "per_tx_limit_exceeded", first.txHash],
      ["7000000", "per_tx_limit_exceeded", second.txHash],
    ]);
    const cli = await runAudit(s, { key });
    expect(cli.code, cli.stderr || cli.stdout.slice(-2000)).to.equal(0);
    const { report, summary } = auditOutput(cli.stdout);
    expect(report.inconsistencies).to.deep.equal([]);
    expect(report.ledgerDisagreements).to.deep.equal([]);
    expect(summary).to.match(/^audit: \d+ agents, \d+ events, 0 anomalies \(0 on-chain, 0 in the ledger\)$/);
  });
});
