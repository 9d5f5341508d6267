import { expect } from "chai";
import { getAddress } from "ethers";
import { NO_EXTRA_LIMITS, SET_POLICY_TYPES, policyDomain } from "../../src/chain/typedData";
import { allowlistRoot } from "../../src/policy/allowlist";
import { stackPerFile, randomOwner, type PolicyInput } from "../helpers/stack";
import { linkedAgent } from "../helpers/owner";
import { documentCounts, expectErrorShape } from "../helpers/store";

const FULL: PolicyInput = {
  perTxLimit: "1.5",
  dailyBudget: "10",
  allowlist: ["api.example.com", "*.data.example", "weather.example"],
  approvalThreshold: "0.75",
  hourlyBudget: "4",
  weeklyBudget: "30",
  monthlyBudget: "90.5",
  lifetimeBudget: "1000",
  maxPaymentsPerHour: 12,
  validUntil: 4_000_000_000,
  maxSwapSlippageBps: 100,
  swapTwapSeconds: 1_800,
  merchantCaps: { "API.Example.com": "2.25", "*.data.example": "3" },
};

describe("spend limits: the grown policy in POST /limits and GET /limits (windows, velocity, expiry, per-entry caps)", () => {
  const { s } = stackPerFile();

  it("deploys every new field signed over the grown SetPolicy, and GET /limits shows them with what remains in each window", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const res = await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(owner, agentAddress, FULL) });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.deep.include({
      hourlyBudget: "4",
      weeklyBudget: "30",
      monthlyBudget: "90.5",
      lifetimeBudget: "1000",
      maxPaymentsPerHour: 12,
      validUntil: 4_000_000_000,
      maxSwapSlippageBps: 100,
      swapTwapSeconds: 1_800,
      merchantCaps: { "api.example.com": "2.25", "*.data.example": "3" },
    });
    const caps = { "api.example.com": 2_250_000n, "*.data.example": 3_000_000n };
    const root = allowlistRoot(["api.example.com", "*.data.example", "weather.example"], caps);
    expect(res.body.allowlistRoot).to.equal(root);

    const onchain = await s.svc.chain.policyAt(res.body.policyContract, s.svc.chain.provider).policy();
    expect([...onchain].map(String)).to.deep.equal([
      "1500000",
      "10000000",
      root,
      "750000",
      "4000000",
      "30000000",
      "90500000",
      "1000000000",
      "12",
      "4000000000",
      "100",
      "1800",
      "0",
    ]);

    const read = await s.api("GET", `/limits?address=${agentAddress}`, { key: apiKey });
    expect(read.status).to.equal(200);
    const view = read.body.agents[0];
    expect(view).to.deep.include({ hourlyBudget: "4", weeklyBudget: "30", maxPaymentsPerHour: 12, validUntil: 4_000_000_000 });
    expect(view.merchantCaps).to.deep.equal({ "api.example.com": "2.25", "*.data.example": "3" });
    expect(view.merchantRemainingToday).to.deep.equal({ "api.example.com": "2.25", "*.data.example": "3" });
    expect(view.windows.map((w: { window: string }) => w.window)).to.deep.equal(["hourly", "daily", "weekly", "monthly", "lifetime"]);
    const weekly = view.windows.find((w: { window: string }) => w.window === "weekly");
    expect(weekly).to.include({ budget: "30", spent: "0", remaining: "30" });
    expect(weekly.resetsAt % (7 * 86_400)).to.equal(0);
    expect(view.windows.find((w: { window: string }) => w.window === "lifetime").resetsAt).to.equal(null);
    expect(view.velocity).to.include({ maxPaymentsPerHour: 12, paymentsThisHour: 0, remaining: 12 });
  });

  it("treats absent new fields as 0 (no such limit): GET /limits lists only the day's window and no velocity limit", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const plain = { perTxLimit: "1", dailyBudget: "5", allowlist: ["api.example.com"], approvalThreshold: "1" };
    expect((await s.api("POST", "/limits", { key: apiKey, body: await s.policyBody(owner, agentAddress, plain) })).status).to.equal(201);
    const view = (await s.api("GET", `/limits?address=${agentAddress}`, { key: apiKey })).body.agents[0];
    expect(view).to.deep.include({
      hourlyBudget: "0",
      weeklyBudget: "0",
      lifetimeBudget: "0",
      maxPaymentsPerHour: 0,
      validUntil: 0,
      merchantCaps: {},
    });
    expect(view.windows).to.have.length(1);
    expect(view.windows[0]).to.include({ window: "daily", budget: "5", remaining: "5" });
    expect(view.velocity.remaining).to.equal(null);
  });

  it("refuses invalid new fields with 400 before anything is signed, stored or sent", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const bad: [Partial<PolicyInput> | Record<string, unknown>, RegExp][] = [
      [{ maxSwapSlippageBps: 50, swapTwapSeconds: 30 }, /swapTwapSeconds must be 60 to 3600/],
      [{ maxSwapSlippageBps: 50, swapTwapSeconds: 0 }, /swapTwapSeconds must be 60 to 3600/],
      [{ swapTwapSeconds: 3_601 }, /swapTwapSeconds/],
      [{ merchantCaps: { "shop.elsewhere.example": "1" } }, /merchantCaps names entries that are not in allowlist.*unknownMerchantCaps/],
      [
        { payees: { "shop.elsewhere.example": "0x000000000000000000000000000000000000dEaD" } },
        /payees names entries that are not in allowlist.*unknownPayees/,
      ],
      [{ merchantCaps: { "api.example.com": "1.0000001" } }, /decimal/],
      [{ maxPaymentsPerHour: 65_536 }, /maxPaymentsPerHour/],
      [{ maxPaymentsPerHour: 1.5 }, /maxPaymentsPerHour/],
      [{ validUntil: 2 ** 32 }, /validUntil/],
      [{ hourlyBudget: "-1" }, /hourlyBudget/],
      [{ lifetimeBudget: "18446744073709.551616" }, /64 bits/],
      [{ weeklyBudget: 30 }, /weeklyBudget/],
      [{ maxSwapSlippageBps: 1_001 }, /maxSwapSlippageBps/],
    ];
    const counts = await documentCounts(s.svc.store.db);
    const blockBefore = await s.svc.chain.provider.getBlockNumber();
    for (const [change, message] of bad) {
      const body = { ...(await s.policyBody(owner, agentAddress, FULL)), ...change };
      const res = await s.api("POST", "/limits", { key: apiKey, body });
      expectErrorShape(res, 400, "bad_request");
      expect(res.body.message + JSON.stringify(res.body.details ?? ""), JSON.stringify(change)).to.match(message);
    }
    expect(await documentCounts(s.svc.store.db)).to.deep.equal(counts);
    expect(await s.svc.chain.provider.getBlockNumber()).to.equal(blockBefore);
  });

  it("refuses (401) a new field changed after signing, and a signature over the old 4-field SetPolicy type", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey } = await linkedAgent(s, owner);
    const signed = await s.policyBody(owner, agentAddress, FULL);
    for (const change of [
      { weeklyBudget: "31" },
      { maxPaymentsPerHour: 13 },
      { validUntil: 0 },
      { merchantCaps: { "api.example.com": "9" } },
      { lifetimeBudget: undefined },
    ]) {
      expectErrorShape(await s.api("POST", "/limits", { key: apiKey, body: { ...signed, ...change } }), 401);
    }
    const plain = { perTxLimit: "1", dailyBudget: "5", allowlist: ["api.example.com"], approvalThreshold: "1" };
    const timestamp = s.now();
    // The 4-field type, and version 3 (every field, the allowlist as a root): signatures over a root are refused.
    const root = allowlistRoot(["api.example.com"]);
    const rootField = { name: "allowlistRoot", type: "bytes32" };
    const fourFields = {
      SetPolicy: [
        ...SET_POLICY_TYPES.SetPolicy.slice(0, 3),
        rootField,
        SET_POLICY_TYPES.SetPolicy[4],
        { name: "timestamp", type: "uint256" },
      ],
    };
    const version3 = { SetPolicy: SET_POLICY_TYPES.SetPolicy.map((f) => (f.name === "merchants" ? rootField : f)) };
    const values = {
      agent: agentAddress,
      perTxLimit: 1_000_000n,
      dailyBudget: 5_000_000n,
      allowlistRoot: root,
      approvalThreshold: 1_000_000n,
    };
    const domain = policyDomain(8453, getAddress(agentAddress));
    for (const humanSignature of [
      await owner.signTypedData(domain, fourFields, { ...values, timestamp }),
      await owner.signTypedData(domain, version3, { ...values, ...NO_EXTRA_LIMITS, timestamp }),
    ]) {
      const res = await s.api("POST", "/limits", { key: apiKey, body: { agentAddress, ...plain, humanSignature, timestamp } });
      expectErrorShape(res, 401);
    }
    expect(await s.svc.chain.isDeployed(getAddress(agentAddress))).to.equal(false);
  });
});
