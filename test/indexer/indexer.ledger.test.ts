/**
 * The indexer's links from chain events to the payment ledger, against the real stack: which event confirms which
 * entry, and a confirmation the payment service overwrote comes back.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { getAddress } from "ethers";
import type { Stack } from "../helpers/stack";
import { randomId, useIndexerStack, type IndexerAgent } from "../helpers/indexerFixture";

describe("indexer: ledger linkage", () => {
  const fx = useIndexerStack();
  const { chain, store, authorize, release, fundedWallet, ledgerEntry, signedTransfer } = fx;
  let s: Stack;
  let agent: IndexerAgent;
  before(() => {
    ({ s, agent } = fx);
  });

  it("PaymentAuthorized confirms the ledger entry with its paymentId (status untouched)", async () => {
    const id = randomId();
    await store().payments.insertOne(ledgerEntry({ paymentId: id, status: "processing", phase: "authorizing" }));
    const receipt = await authorize(agent.policyContract, id, 1n);
    await s.svc.indexer.syncOnce();
    const doc = await store().payments.findOne({ paymentId: id });
    expect(doc!.onchain).to.deep.equal({ confirmed: true, blockNumber: receipt.blockNumber });
    expect(doc).to.include({ status: "processing", phase: "authorizing" });
  });

  it("PaymentReleased moves the confirmation to the release block", async () => {
    const id = randomId();
    await store().payments.insertOne(ledgerEntry({ paymentId: id, status: "failed", phase: "done" }));
    await authorize(agent.policyContract, id, 1n);
    await s.svc.indexer.syncOnce();
    const r = await release(agent.policyContract, id);
    await s.svc.indexer.syncOnce();
    const doc = await store().payments.findOne({ paymentId: id });
    expect(doc!.onchain).to.deep.equal({ confirmed: true, blockNumber: r.blockNumber });
    expect(doc!.status).to.equal("failed");
  });

  it("PaymentVoided is indexed with its args and confirms the (failed) entry with its paymentId", async () => {
    const id = randomId();
    await store().payments.insertOne(ledgerEntry({ paymentId: id, status: "failed", phase: "done", reason: "not_authorized" }));
    const r = await s.svc.services.payments.ops.voidUnrecorded(agent.policyContract, id);
    if (!r.voided) throw new Error("not voided");
    await s.svc.indexer.syncOnce();
    const event = await store().chainEvents.findOne({ event: "PaymentVoided", paymentId: id });
    expect(event).to.include({ txHash: r.txHash.toLowerCase(), agentAddress: getAddress(agent.policyContract), confirmed: true });
    expect(event!.args).to.deep.equal({ paymentId: id, agent: getAddress(agent.policyContract) });
    const doc = await store().payments.findOne({ paymentId: id });
    expect(doc!.onchain).to.deep.equal({ confirmed: true, blockNumber: r.receipt.blockNumber });
    expect(doc).to.include({ status: "failed", reason: "not_authorized" });
  });

  it("PaymentBlocked confirms the entry whose txHash is the blocked transaction, even when written after the event", async () => {
    const receipt = await authorize(agent.policyContract, randomId(), 9_000_000n);
    await s.svc.indexer.syncOnce(); // event indexed and confirmed before the ledger entry exists
    const txnId = "txn_blocked_" + randomBytes(4).toString("hex");
    await store().payments.insertOne(
      ledgerEntry({
        txnId,
        status: "blocked",
        phase: "done",
        reason: "per_tx_limit_exceeded",
        txHash: receipt.hash,
        authorizeTxHash: receipt.hash,
        onchain: { confirmed: false, blockNumber: receipt.blockNumber },
      }),
    );
    await s.svc.indexer.syncOnce();
    const doc = await store().payments.findOne({ txnId });
    expect(doc!.onchain).to.deep.equal({ confirmed: true, blockNumber: receipt.blockNumber });
    expect(doc!.status).to.equal("blocked");
  });

  it("a confirmation overwritten by the payment service afterwards is restored on the next run", async () => {
    const id = randomId();
    await store().payments.insertOne(ledgerEntry({ paymentId: id }));
    const receipt = await authorize(agent.policyContract, id, 1n);
    await s.svc.indexer.syncOnce();
    await store().payments.updateOne(
      { paymentId: id },
      { $set: { onchain: { confirmed: false, blockNumber: receipt.blockNumber }, updatedAt: new Date() } },
    );
    await s.svc.indexer.syncOnce();
    expect((await store().payments.findOne({ paymentId: id }))!.onchain).to.deep.equal({
      confirmed: true,
      blockNumber: receipt.blockNumber,
    });
  });

  it("USDC AuthorizationUsed (agent, nonce) confirms approved payments only", async () => {
    const relayer = await fundedWallet();
    const approvedNonce = randomId();
    const failedNonce = randomId();
    await store().payments.insertMany([
      ledgerEntry({ paymentId: approvedNonce, status: "approved", phase: "done" }),
      ledgerEntry({ paymentId: failedNonce, status: "failed", phase: "done" }),
    ]);
    const r1 = await (await chain().provider.broadcastTransaction(await signedTransfer(relayer, approvedNonce))).wait();
    const r2 = await (await chain().provider.broadcastTransaction(await signedTransfer(relayer, failedNonce))).wait();
    await s.svc.indexer.syncOnce();

    const used = await store().chainEvents.findOne({ txHash: r1!.hash, event: "AuthorizationUsed" });
    expect(used).to.include({
      address: getAddress(chain().usdc.target as string),
      agentAddress: agent.agentAddress,
      paymentId: approvedNonce,
      confirmed: true,
    });
    expect(used!.args).to.deep.equal({ authorizer: agent.agentAddress, nonce: approvedNonce });
    expect(await store().chainEvents.countDocuments({ txHash: r1!.hash }), "USDC Transfer is not indexed").to.equal(1);

    expect((await store().payments.findOne({ paymentId: approvedNonce }))!.onchain).to.deep.equal({
      confirmed: true,
      blockNumber: r1!.blockNumber,
    });
    expect(await store().chainEvents.countDocuments({ txHash: r2!.hash, event: "AuthorizationUsed" })).to.equal(1);
    // A failed payment keeps the confirmation of its authorisation, never the settlement's.
    const authorizedFailed = await store().chainEvents.findOne({ paymentId: failedNonce, event: "PaymentAuthorized" });
    expect((await store().payments.findOne({ paymentId: failedNonce }))!.onchain).to.deep.equal({
      confirmed: true,
      blockNumber: authorizedFailed!.blockNumber,
    });
  });
});
