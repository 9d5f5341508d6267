import { expect } from "chai";
import { Contract, Wallet, getAddress, hexlify, parseEther, randomBytes, toBeHex } from "ethers";
import { leafStruct, proveMerchant } from "../../src/policy/allowlist";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { linkedAgent, ownerKey } from "../helpers/owner";
import { expectErrorShape } from "../helpers/store";

describe("GET /wallet/balance and GET /wallet/agents", () => {
  let s: Stack;
  let minter: Wallet;
  before(async () => {
    s = await startStack();
    // A funded account of our own: the operator's nonce belongs to the service.
    minter = new Wallet(Wallet.createRandom().privateKey, s.svc.chain.provider);
    await s.svc.chain.provider.send("hardhat_setBalance", [minter.address, toBeHex(parseEther("10"))]);
  });
  after(async () => s?.close());

  const mintUsdc = async (to: string, baseUnits: bigint) => {
    const usdc = new Contract(s.svc.config.usdcAddress, ["function mint(address,uint256) returns (bool)"], minter);
    await (await usdc.mint(to, baseUnits)).wait();
  };

  it("reads USDC and ETH from chain for an agent with no policy (budget 0, not deployed)", async () => {
    const { agentAddress, apiKey } = await s.genesis();
    const empty = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key: apiKey });
    expect(empty.status, JSON.stringify(empty.body)).to.equal(200);
    expect(empty.body).to.include({ agentAddress, usdc: "0", eth: "0.0", deployed: false, remainingDailyBudget: "0" });

    await mintUsdc(agentAddress, 12_345_678n);
    await s.svc.chain.provider.send("hardhat_setBalance", [agentAddress, toBeHex(parseEther("1.5"))]);
    const funded = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key: apiKey });
    expect(funded.status).to.equal(200);
    expect(funded.body).to.include({ agentAddress, usdc: "12.345678", eth: "1.5", currency: "USDC", chainId: 8453 });
    expect(funded.body.blockNumber).to.equal(await s.svc.chain.provider.getBlockNumber());
  });

  it("reports the remaining daily budget the contract holds, including today's spend", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey, policyContract } = await s.onboard(owner, {
      dailyBudget: "20",
      perTxLimit: "5",
      approvalThreshold: "5",
      allowlist: ["*"],
    });
    const fresh = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key: apiKey });
    expect(fresh.body).to.include({ dailyBudget: "20", spentToday: "0", remainingDailyBudget: "20", deployed: true, policyContract });

    // Spend 3.25 USDC on-chain through the policy contract, the way a payment does (operator's authorizePayment).
    const proof = proveMerchant(["*"], "api.example.com")!;
    const policy = s.svc.chain.policyAt(policyContract);
    const empty = { approvalId: "", amount: 0n, timestamp: 0n, signature: "0x" };
    await s.svc.chain.sendAndWait((o) =>
      policy.authorizePayment(
        hexlify(randomBytes(32)),
        "api.example.com",
        leafStruct(proof),
        proof.proof,
        { payTo: randomOwner().address, amount: 3_250_000n, validAfter: 0n, validBefore: BigInt(Math.floor(Date.now() / 1000) + 300) },
        empty,
        o,
      ),
    );
    expect(await policy.spentToday()).to.equal(3_250_000n);

    const spent = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key: apiKey });
    expect(spent.status).to.equal(200);
    expect(spent.body).to.include({ dailyBudget: "20", spentToday: "3.25", remainingDailyBudget: "16.75" });
    // The owner's key reads the same balance.
    const byOwner = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key: await ownerKey(s, owner) });
    expect(byOwner.status).to.equal(200);
    expect(byOwner.body.remainingDailyBudget).to.equal("16.75");
  });

  it("requires the address query (400)", async () => {
    const { apiKey } = await s.genesis();
    expectErrorShape(await s.api("GET", "/wallet/balance", { key: apiKey }), 400, "bad_request");
  });

  it("lists only the agent itself for an agent key", async () => {
    const { agentAddress, apiKey } = await s.genesis({ label: "solo" });
    const res = await s.api("GET", "/wallet/agents", { key: apiKey });
    expect(res.status).to.equal(200);
    expect(res.body.agents).to.have.length(1);
    expect(res.body.agents[0]).to.include({ address: agentAddress, label: "solo", ownerAddress: null, deployed: false });
  });

  it("lists every agent linked to an owner, with its policy contract and deployment state", async () => {
    const owner = randomOwner();
    const a = await linkedAgent(s, owner, { label: "alpha" });
    const b = await s.onboard(owner);
    const res = await s.api("GET", "/wallet/agents", { key: await ownerKey(s, owner) });
    expect(res.status).to.equal(200);
    const byAddress = Object.fromEntries(res.body.agents.map((x: { address: string }) => [x.address, x]));
    expect(Object.keys(byAddress).sort()).to.deep.equal([a.agentAddress, b.agentAddress].sort());
    expect(byAddress[a.agentAddress]).to.include({ label: "alpha", ownerAddress: owner.address, deployed: false });
    expect(byAddress[b.agentAddress]).to.include({ ownerAddress: owner.address, deployed: true, policyContract: b.policyContract });
    expect(byAddress[a.agentAddress].policyContract).to.equal(getAddress(a.agentAddress));
  });
});
