import { expect } from "chai";
import hre from "hardhat";
import { Wallet, getAddress, parseEther, toBeHex, ZeroAddress } from "ethers";
import { LINK_AGENT_TYPES, WITHDRAW_TYPES, policyDomain, serviceDomain } from "../../src/chain/typedData";
import { toBaseUnits } from "../../src/amounts";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { handOver, linkedAgent, ownerKey } from "../helpers/owner";
import { mintUsdc, usdcBalance } from "../helpers/sellers";
import { documentCounts, expectErrorShape } from "../helpers/store";

const POLICY = { perTxLimit: "5", dailyBudget: "20", approvalThreshold: "3", allowlist: ["127.0.0.1"] };

describe("owner powers over the agent wallet: POST /agents/:address/withdraw and /owner", () => {
  const { s } = stackPerFile();

  async function withdrawBody(owner: Wallet, agent: string, w: { token: "USDC" | "ETH"; to: string; amount: string; timestamp?: number }) {
    const timestamp = w.timestamp ?? s.now();
    const token = w.token === "ETH" ? ZeroAddress : s.svc.config.usdcAddress;
    const amount = w.token === "ETH" ? parseEther(w.amount) : toBaseUnits(w.amount);
    const humanSignature = await owner.signTypedData(policyDomain(8453, agent), WITHDRAW_TYPES, {
      agent,
      token,
      to: w.to,
      amount,
      timestamp,
    });
    return { token: w.token, to: w.to, amount: w.amount, timestamp, humanSignature };
  }

  it("withdraws USDC and ETH to any address with the owner's signature, while paused too (Withdrawn on-chain)", async () => {
    const owner = randomOwner();
    const a = await s.onboard(owner, POLICY);
    const key = await ownerKey(s, owner);
    await mintUsdc(s, a.agentAddress, 10_000_000n);
    await s.svc.chain.provider.send("hardhat_setBalance", [a.agentAddress, toBeHex(parseEther("1"))]);
    const { signature, timestamp } = await s.signPause(owner, a.agentAddress, true);
    expect(
      (await s.api("POST", `/agents/${a.agentAddress}/pause`, { key, body: { paused: true, humanSignature: signature, timestamp } }))
        .status,
    ).to.equal(200);

    const to = Wallet.createRandom().address;
    const res = await s.api("POST", `/agents/${a.agentAddress}/withdraw`, {
      key,
      body: await withdrawBody(owner, a.agentAddress, { token: "USDC", to, amount: "7.5" }),
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({
      status: "withdrawn",
      agentAddress: a.agentAddress,
      token: getAddress(s.svc.config.usdcAddress),
      to,
      amount: "7.5",
    });
    expect(await usdcBalance(s, to)).to.equal(7_500_000n);
    expect(await usdcBalance(s, a.agentAddress)).to.equal(2_500_000n);
    const receipt = await s.svc.chain.provider.getTransactionReceipt(res.body.txHash);
    const c = s.svc.chain.policyAt(a.agentAddress, s.svc.chain.provider);
    expect(receipt!.logs.map((l) => c.interface.parseLog(l)?.name)).to.include("Withdrawn");

    const eth = await s.api("POST", `/agents/${a.agentAddress}/withdraw`, {
      key,
      body: await withdrawBody(owner, a.agentAddress, { token: "ETH", to, amount: "0.25" }),
    });
    expect(eth.status, JSON.stringify(eth.body)).to.equal(200);
    expect(eth.body).to.include({ token: ZeroAddress, amount: "0.25" });
    expect(await s.svc.chain.provider.getBalance(to)).to.equal(parseEther("0.25"));
  });

  it("refuses, changing nothing: another signer, a replay, an agent key, another owner, too much, too many decimals, no wallet yet", async () => {
    const owner = randomOwner();
    const a = await s.onboard(owner, POLICY);
    const key = await ownerKey(s, owner);
    await mintUsdc(s, a.agentAddress, 1_000_000n);
    const to = Wallet.createRandom().address;
    const path = `/agents/${a.agentAddress}/withdraw`;
    const stranger = randomOwner();
    const strangerKey = await ownerKey(s, stranger);
    const before = await documentCounts(s.svc.store.db);

    const forged = await withdrawBody(randomOwner(), a.agentAddress, { token: "USDC", to, amount: "1" });
    expectErrorShape(await s.api("POST", path, { key, body: forged }), 401, "invalid_signature");
    expectErrorShape(
      await s.api("POST", path, { key: a.apiKey, body: await withdrawBody(owner, a.agentAddress, { token: "USDC", to, amount: "1" }) }),
      403,
      "forbidden",
    );
    expectErrorShape(
      await s.api("POST", path, {
        key: strangerKey,
        body: await withdrawBody(stranger, a.agentAddress, { token: "USDC", to, amount: "1" }),
      }),
      403,
      "forbidden",
    );
    expectErrorShape(
      await s.api("POST", path, { key, body: await withdrawBody(owner, a.agentAddress, { token: "USDC", to, amount: "2" }) }),
      422,
      "insufficient_funds",
    );
    expectErrorShape(
      await s.api("POST", path, {
        key,
        body: { ...(await withdrawBody(owner, a.agentAddress, { token: "USDC", to, amount: "1" })), amount: "0.0000001" },
      }),
      400,
      "bad_request",
    );
    expectErrorShape(
      await s.api("POST", path, {
        key,
        body: { ...(await withdrawBody(owner, a.agentAddress, { token: "USDC", to, amount: "1" })), token: "DOGE" },
      }),
      400,
      "bad_request",
    );
    expect(await usdcBalance(s, a.agentAddress)).to.equal(1_000_000n);
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(before);

    const ok = await withdrawBody(owner, a.agentAddress, { token: "USDC", to, amount: "0.5" });
    expect((await s.api("POST", path, { key, body: ok })).status).to.equal(200);
    expectErrorShape(await s.api("POST", path, { key, body: ok }), 401, "invalid_signature"); // replayed
    expect(await usdcBalance(s, to)).to.equal(500_000n);

    const undeployed = await linkedAgent(s, owner);
    expectErrorShape(
      await s.api("POST", `/agents/${undeployed.agentAddress}/withdraw`, {
        key,
        body: await withdrawBody(owner, undeployed.agentAddress, { token: "USDC", to, amount: "1" }),
      }),
      422,
      "no_policy",
    );
  });

  it("answers a withdrawal the chain refused after the balance check (two tabs emptying the wallet) with 422, not a 500", async () => {
    const owner = randomOwner();
    const a = await s.onboard(owner, POLICY);
    const key = await ownerKey(s, owner);
    await mintUsdc(s, a.agentAddress, 2_000_000n);
    const path = `/agents/${a.agentAddress}/withdraw`;
    const [to1, to2] = [Wallet.createRandom().address, Wallet.createRandom().address];
    const bodies = [
      await withdrawBody(owner, a.agentAddress, { token: "USDC", to: to1, amount: "2" }),
      await withdrawBody(owner, a.agentAddress, { token: "USDC", to: to2, amount: "2" }),
    ];
    const { provider } = s.svc.chain;
    // Both pass the balance check before either is mined: the second transfer then exceeds what is left.
    await provider.send("evm_setAutomine", [false]);
    let answers: Awaited<ReturnType<typeof s.api>>[];
    try {
      const sent = Promise.all(bodies.map((body) => s.api("POST", path, { key, body })));
      const done = sent.then(() => true);
      while (!(await Promise.race([done, Promise.resolve(false)]))) {
        const pending = await provider.send("eth_getBlockByNumber", ["pending", false]);
        if (pending.transactions.length >= 1) await provider.send("evm_mine", []);
        else await new Promise((r) => setImmediate(r));
      }
      answers = await sent;
    } finally {
      await provider.send("evm_setAutomine", [true]);
    }
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses, JSON.stringify(answers.map((r) => r.body))).to.deep.equal([200, 422]);
    expectErrorShape(
      answers.find((r) => r.status === 422)!,
      422,
      "withdraw_failed",
    );
    expect((await usdcBalance(s, to1)) + (await usdcBalance(s, to2))).to.equal(2_000_000n);
  });

  it("hands the agent over: on-chain owner and the service follow; the old owner's key loses it, the new owner's key gets it", async () => {
    const owner = randomOwner();
    const heir = randomOwner();
    const a = await s.onboard(owner, POLICY);
    const key = await ownerKey(s, owner);
    // The previous owner takes an agent key just before handing over, to keep paying under the new owner's policy.
    const kept = await s.api("POST", `/agents/${a.agentAddress}/key`, { key });
    expect(kept.status).to.equal(201);
    const res = await handOver(s, owner, a.agentAddress, heir.address, key);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ agentAddress: a.agentAddress, ownerAddress: heir.address });
    expect(await s.svc.chain.policyAt(a.agentAddress, s.svc.chain.provider).owner()).to.equal(heir.address);
    expectErrorShape(await s.api("GET", `/limits?address=${a.agentAddress}`, { key }), 403, "forbidden");
    const heirKey = await ownerKey(s, heir);
    const view = await s.api("GET", `/limits?address=${a.agentAddress}`, { key: heirKey });
    expect(view.status).to.equal(200);
    expect(view.body.agents[0].ownerAddress).to.equal(heir.address);
    // The old owner's signature no longer moves anything.
    const stale = await withdrawBody(owner, a.agentAddress, { token: "USDC", to: owner.address, amount: "1" });
    expectErrorShape(await s.api("POST", `/agents/${a.agentAddress}/withdraw`, { key: heirKey, body: stale }), 401, "invalid_signature");
    // Nor does any agent key from before: the new owner issues the agent its own.
    for (const old of [a.apiKey, kept.body.apiKey as string]) {
      const pay = { agentAddress: a.agentAddress, serviceUrl: "http://127.0.0.1:1/r", maxAmount: "1", intent: "after the hand-over" };
      expectErrorShape(await s.api("POST", "/pay", { key: old, body: pay }), 401, "unauthorized");
    }
    const fresh = await s.api("POST", `/agents/${a.agentAddress}/key`, { key: heirKey });
    expect(fresh.status, JSON.stringify(fresh.body)).to.equal(201);
    expect((await s.api("GET", `/limits?address=${a.agentAddress}`, { key: fresh.body.apiKey as string })).status).to.equal(200);
  });

  it("refuses to hand an agent over to an agent wallet (its own or another's), which can never sign as owner: 400, nothing changes", async () => {
    const owner = randomOwner();
    const a = await s.onboard(owner, POLICY);
    const other = await s.genesis();
    const key = await ownerKey(s, owner);
    for (const newOwner of [a.agentAddress, other.agentAddress]) {
      expectErrorShape(await handOver(s, owner, a.agentAddress, newOwner, key), 400, "bad_request");
    }
    expect(await s.svc.chain.policyAt(a.agentAddress, s.svc.chain.provider).owner()).to.equal(owner.address);
    expect((await s.api("GET", `/limits?address=${a.agentAddress}`, { key })).status).to.equal(200);
  });

  it("takes an ERC-1271 contract owner (a smart wallet) as the chain does: link, first policy and pause", async () => {
    const signer = randomOwner();
    const [deployer] = await hre.ethers.getSigners();
    const wallet = await (await hre.ethers.getContractFactory("ERC1271Wallet", deployer)).deploy(signer.address);
    const walletAddress = getAddress(await wallet.getAddress());
    // The ERC1271Wallet checks the signer's raw signature of the digest: what signTypedData produces.
    const agent = await s.genesis();
    const ts = s.now();
    const ownerSignature = await signer.signTypedData(serviceDomain(8453), LINK_AGENT_TYPES, {
      agent: agent.agentAddress,
      owner: walletAddress,
      timestamp: ts,
    });
    const activationCode = new URL(s.activationPath(agent.agentAddress), "http://x").searchParams.get("code");
    const linked = await s.api("POST", "/agents/link", {
      body: { agentAddress: agent.agentAddress, ownerAddress: walletAddress, ownerSignature, timestamp: ts, activationCode },
    });
    expect(linked.status, JSON.stringify(linked.body)).to.equal(200);
    const body = await s.policyBody(signer, agent.agentAddress, POLICY);
    const deployed = await s.api("POST", "/limits", { key: agent.apiKey, body });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(201);
    expect(await s.svc.chain.policyAt(agent.agentAddress, s.svc.chain.provider).owner()).to.equal(walletAddress);
    // A signature of another key is refused by the server exactly as the contract would refuse it.
    const forged = await s.policyBody(randomOwner(), agent.agentAddress, { ...POLICY, dailyBudget: "99" }, s.now() + 1);
    expectErrorShape(await s.api("POST", "/limits", { key: agent.apiKey, body: forged }), 401, "invalid_signature");
  });
});
