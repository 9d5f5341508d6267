/**
 * The policy binds channel payments: a pause stops vouchers (the service refuses at once, and the wallet's ERC-1271
 * refuses a voucher a stolen key signs), a resume needs a new deposit authorised in the new epoch before vouchers are
 * accepted again; a channel to a payee the owner did not name is never opened; concurrent payments of one agent never
 * fork the voucher sequence; and MCP's pay tool pays the same channels.
 */
import { expect } from "chai";
import { Wallet, TypedDataEncoder, toBeHex, zeroPadValue } from "ethers";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { usdcBalance } from "../helpers/sellers";
import { ownerKey } from "../helpers/owner";
import { spentToday } from "../helpers/payments";
import { stealAgentKey } from "../helpers/stealKey";
import { startBatchSeller, startUptoSeller } from "../helpers/schemeSellers";
import { agentHeaders, callTool, mcpClient, textOf } from "../mcp/client";
import { USDC, schemesPerFile, storedChannel } from "./fixture";

const PRICE = 1_000n;
const ENCRYPTION_KEY = "ab".repeat(32);
const MAGIC = "0x1626ba7e";

describe("the policy binds channel payments", () => {
  const { s, keep, facilitator, fundedAgent, pay } = schemesPerFile(
    { CHANNEL_DEPOSIT_REQUESTS: "10", WALLET_ENCRYPTION_KEY: ENCRYPTION_KEY },
    { maxAmount: "0.01", intent: "per call" },
  );

  async function agentAndSeller(policy: Record<string, unknown> = {}) {
    const seller = await startBatchSeller({ facilitator: facilitator().client, usdc: s.svc.config.usdcAddress, price: PRICE });
    keep(seller);
    const a = await fundedAgent(policy);
    return { a, seller, owner: a.owner };
  }

  /** A voucher of `channelId` for `cumulative` as a thief holding the agent's signing key would make it. */
  async function stolenVoucher(agentAddress: string, channelId: string, cumulative: bigint) {
    const key = await stealAgentKey(s, ENCRYPTION_KEY, agentAddress);
    const domain = { name: "x402 Batch Settlement", version: "1", chainId: 8453, verifyingContract: BATCH_SETTLEMENT_ADDRESS };
    const types = {
      Voucher: [
        { name: "channelId", type: "bytes32" },
        { name: "maxClaimableAmount", type: "uint128" },
      ],
    };
    const message = { channelId, maxClaimableAmount: cumulative };
    const digest = TypedDataEncoder.hash(domain, types, message);
    const ecdsa = key.signingKey.sign(digest).serialized;
    return { digest, signature: `${channelId}${zeroPadValue(toBeHex(cumulative), 32).slice(2)}${ecdsa.slice(2)}` };
  }

  it("a pause stops vouchers; after the resume a deposit in the new epoch comes first", async () => {
    const { a, seller, owner } = await agentAndSeller();
    for (let i = 0; i < 3; i++) expect((await pay(a, seller.resource)).status).to.equal(200);
    const channel = (await s.svc.store.channels.findOne({ agentAddress: a.agentAddress }))!;
    const wallet = s.svc.chain.policyAt(a.policyContract, s.svc.chain.provider);
    const valid = await stolenVoucher(a.agentAddress, channel.channelId, 4n * PRICE);
    expect(await wallet.isValidSignature(valid.digest, valid.signature)).to.equal(MAGIC);

    const key = await ownerKey(s, owner);
    const pauseBody = async (paused: boolean, timestamp: number) => {
      const { signature, epoch } = await s.signPause(owner, a.agentAddress, paused, timestamp);
      return { paused, epoch, humanSignature: signature, timestamp };
    };
    const pauseTs = s.now();
    expect((await s.api("POST", `/agents/${a.agentAddress}/pause`, { key, body: await pauseBody(true, pauseTs) })).status).to.equal(200);
    const served = seller.served;
    const refused = await pay(a, seller.resource);
    expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
    expect(refused.body.reason).to.equal("policy_paused");
    expect(seller.served).to.equal(served);
    // A thief with the agent's key: the wallet answers no voucher of the channel while paused.
    expect(await wallet.isValidSignature(valid.digest, valid.signature)).to.not.equal(MAGIC);

    const resumeTs = Math.max(pauseTs, (await s.svc.chain.provider.getBlock("latest"))!.timestamp) + 1;
    const resumed = await s.api("POST", `/agents/${a.agentAddress}/pause`, { key, body: await pauseBody(false, resumeTs) });
    expect(resumed.status, JSON.stringify(resumed.body)).to.equal(200);
    // Still none after the resume: the channel's deposit is of the old epoch.
    expect(await wallet.isValidSignature(valid.digest, valid.signature)).to.not.equal(MAGIC);
    const next = await pay(a, seller.resource);
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
    expect(next.body.channel.depositTxHash, "a top-up in the new epoch").to.match(/^0x[0-9a-f]{64}$/);
    expect(next.body.channel.cumulative).to.equal("0.004");
    const after = await pay(a, seller.resource);
    expect(after.body.channel.depositTxHash).to.equal(null);
  });

  it("a seller taken off the allowlist gets at most one unpaid request (the 402 asked beside the agent's read), then none", async () => {
    const { a, seller, owner } = await agentAndSeller();
    for (let i = 0; i < 2; i++) expect((await pay(a, seller.resource)).status).to.equal(200);
    const next = { perTxLimit: "5", dailyBudget: "20", allowlist: ["localhost"], approvalThreshold: "2" };
    const body = await s.policyBody(owner, a.agentAddress, next, s.now() + 1);
    const updated = await s.api("POST", "/limits", { key: await ownerKey(s, owner), body });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(201);
    const asked = seller.handlerMs.length;
    const served = seller.served;
    // Four at once (queued in this process behind the first), then two more.
    const refusals = [...(await Promise.all(Array.from({ length: 4 }, () => pay(a, seller.resource))))];
    for (let i = 0; i < 2; i++) refusals.push(await pay(a, seller.resource));
    for (const refused of refusals) {
      expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
      expect(refused.body.reason).to.equal("merchant_not_allowed");
    }
    expect(seller.served, "nothing paid").to.equal(served);
    // The first payment after the change asked the seller's 402 before its read showed the new policy; the payments
    // queued behind it and after it are refused before any request, as for any seller off the list.
    expect(seller.handlerMs.length - asked, "unpaid requests to the seller").to.be.at.most(1);
  });

  it("opens no channel to a payee the owner did not name", async () => {
    const named = Wallet.createRandom().address;
    const { a, seller } = await agentAndSeller({ allowlist: ["127.0.0.1"], payees: { "127.0.0.1": named } });
    const res = await pay(a, seller.resource);
    expect(res.status, JSON.stringify(res.body)).to.equal(422);
    expect(res.body).to.include({ reason: "payee_not_allowed", payTo: seller.payTo });
    expect(await s.svc.store.channels.countDocuments({ agentAddress: a.agentAddress })).to.equal(0);
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
  });

  it("concurrent payments of one agent take turns: one cumulative sequence, no fork", async () => {
    const { a, seller } = await agentAndSeller();
    const answers = await Promise.all(Array.from({ length: 12 }, () => pay(a, seller.resource)));
    for (const r of answers) expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const cumulatives = answers.map((r) => r.body.channel.cumulative as string).sort();
    expect(new Set(cumulatives).size).to.equal(12);
    const channel = await storedChannel(s, a.agentAddress);
    expect(channel).to.include({ charged: "12000", signed: "12000" });
    const { settle } = await seller.manager.claimAndSettle();
    expect(settle?.transaction).to.match(/^0x[0-9a-f]{64}$/);
  });

  it("MCP's pay tool pays the same channel with vouchers, and an upto seller below its ceiling", async () => {
    const { a, seller } = await agentAndSeller();
    const c = await mcpClient(s.url, agentHeaders(a));
    try {
      for (let i = 0; i < 3; i++) {
        const r = await callTool(c, "pay", { serviceUrl: seller.resource, maxAmount: "0.01", intent: "through MCP" });
        expect(r.isError, textOf(r)).to.not.equal(true);
        expect(r.structuredContent).to.include({ status: "approved", scheme: "batch-settlement", amount: "0.001" });
      }
      expect(await storedChannel(s, a.agentAddress)).to.include({ charged: "3000" });
      const upto = await startUptoSeller({ facilitator: facilitator().client, usdc: s.svc.config.usdcAddress, ceiling: 5_000n });
      keep(upto);
      upto.setUsage(1_234n);
      const r = await callTool(c, "pay", { serviceUrl: upto.resource, maxAmount: "0.01", intent: "metered through MCP" });
      expect(r.isError, textOf(r)).to.not.equal(true);
      expect(r.structuredContent).to.include({ status: "approved", scheme: "upto", amount: "0.001234", ceiling: "0.005" });
    } finally {
      await c.close();
    }
  });

  it("takes no top-up into a channel while its forced withdrawal is in progress: 409 before anything is signed, nothing paid", async () => {
    const { a, seller } = await agentAndSeller();
    expect((await pay(a, seller.resource)).status).to.equal(200); // the deposit (10 requests' worth) and its voucher
    const channel = (await s.svc.store.channels.findOne({ agentAddress: a.agentAddress }))!;
    const started = await s.api("POST", `/agents/${a.agentAddress}/channels/${channel.channelId}/withdraw`, { key: a.apiKey });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    const spent = await spentToday(s, a.policyContract);
    let answer = await pay(a, seller.resource);
    for (let i = 0; i < 10 && answer.status === 200; i++) answer = await pay(a, seller.resource); // vouchers, until a top-up
    expect(answer.status, JSON.stringify(answer.body)).to.equal(409);
    expect(answer.body.message).to.include("being withdrawn");
    expect(await spentToday(s, a.policyContract), "no deposit authorised").to.equal(spent);
  });

  it("a seller that never refunds: the close fails, the forced withdrawal starts, and after the delay finishes and credits", async () => {
    const { a, seller } = await agentAndSeller();
    for (let i = 0; i < 3; i++) expect((await pay(a, seller.resource)).status).to.equal(200);
    const channel = (await s.svc.store.channels.findOne({ agentAddress: a.agentAddress }))!;
    expect(await spentToday(s, a.policyContract)).to.equal(10_000n);
    await seller.close(); // gone, its vouchers never claimed
    const path = `/agents/${a.agentAddress}/channels/${channel.channelId}`;
    const close = await s.api("POST", `${path}/close`, { key: a.apiKey });
    expect(close.status, JSON.stringify(close.body)).to.equal(502);
    expect(close.body.message).to.include("/withdraw");

    const started = await s.api("POST", `${path}/withdraw`, { key: a.apiKey });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    expect(started.body).to.include({ state: "started", amount: "0.01" });
    const early = await s.api("POST", `${path}/withdraw`, { key: a.apiKey });
    expect(early.status, JSON.stringify(early.body)).to.equal(409);
    expect(early.body.error).to.equal("conflict");

    await s.svc.chain.provider.send("evm_increaseTime", [channel.config.withdrawDelay + 1]);
    await s.svc.chain.provider.send("evm_mine", []);
    const finished = await s.api("POST", `${path}/withdraw`, { key: a.apiKey });
    expect(finished.status, JSON.stringify(finished.body)).to.equal(200);
    expect(finished.body).to.include({ state: "finished", creditedNow: "0.01" });
    expect(finished.body.channel).to.include({ status: "closed", held: "0" });
    expect(await spentToday(s, a.policyContract)).to.equal(0n);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(10n * USDC);
    const again = await s.api("POST", `${path}/withdraw`, { key: a.apiKey });
    expect(again.status).to.equal(409);
  });
});
