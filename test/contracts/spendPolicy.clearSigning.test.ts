import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { privateKeyToAccount } from "viem/accounts";
import { type MerchantFields, SET_POLICY_TYPES } from "../../src/chain/typedData";
import type { SpendPolicyFactory } from "../../typechain-types";
import { ANY_PAYEE, MAX_MERCHANTS, allowlistRoot, merchantsOf, normalizeAllowlistEntry } from "../../src/policy/allowlist";
import {
  DEFAULT_POLICY,
  NO_APPROVAL,
  type PolicyValues,
  deployAgentFor,
  leafOf,
  nextTimestamp,
  paymentId,
  policyFixture,
  policyTuple,
  proofFor,
  signSetPolicy,
  transferOf,
  usdc,
} from "../helpers/policyFixture";

const { ethers } = hre;
const P = "0x00000000000000000000000000000000000bee01";
const Q = "0x00000000000000000000000000000000000bee02";
const ENTRIES = ["api.example.com", "*.data.io", "weather.xyz"];
const CAPS = { "api.example.com": usdc(2) };
const PAYEES = { "api.example.com": P, "weather.xyz": Q };

/**
 * SetPolicy version 4: the owner signs every allowlist entry in clear (entry, cap, payee, requireSignedOffer), and the
 * contract derives the Merkle root payments prove against from exactly those entries. No page, server or relayer can
 * have her signature enforce a list she did not see.
 */
describe("SpendPolicy clear signing: the allowlist the owner signs is the one enforced", function () {
  async function fixture() {
    const f = await policyFixture();
    /** updatePolicy of `relayed`, with the owner's signature over `signed` (the same list unless a test swaps it). */
    const update = async (signed: PolicyValues, relayed: PolicyValues = signed) => {
      const ts = await nextTimestamp();
      const sig = await signSetPolicy(f.owner, f.policyAddress, f.agent, signed, ts);
      return f.policy.connect(f.other).updatePolicy(relayed, ts, sig);
    };
    const updates = await ethers.getContractAt("SpendPolicyUpdates", f.agent);
    return { ...f, update, updates };
  }
  const policyWith = (merchants: MerchantFields[]): PolicyValues => ({ ...DEFAULT_POLICY, merchants });
  const signedList = merchantsOf(ENTRIES, CAPS, PAYEES, ["weather.xyz"]);

  it("stores the root it derives from the signed entries (StandardMerkleTree's), and the service's proofs admit payments", async function () {
    const f = await loadFixture(fixture);
    await (await f.update(policyWith(signedList))).wait();
    expect((await f.policy.policy()).allowlistRoot).to.equal(allowlistRoot(ENTRIES, CAPS, PAYEES));
    await expect(
      f.pay(usdc(1), "api.example.com", { entries: ENTRIES, caps: CAPS, payees: PAYEES, transfer: await transferOf(usdc(1), P) }),
    ).to.emit(f.policy, "PaymentAuthorized");
    await expect(f.pay(usdc(1), "x.data.io", { entries: ENTRIES, caps: CAPS, payees: PAYEES })).to.emit(f.policy, "PaymentAuthorized");
  });

  it("enforces no list but the one signed: another entry, cap, payee or flag, one more or one less, all revert", async function () {
    const f = await loadFixture(fixture);
    const swapped = (i: number, m: Partial<MerchantFields>) => signedList.map((x, j) => (j === i ? { ...x, ...m } : x));
    const others: MerchantFields[][] = [
      swapped(0, { entry: "*.data.iq" }),
      swapped(1, { dailyCap: usdc(2000) }),
      swapped(1, { payee: "0x00000000000000000000000000000000000bad00" }),
      swapped(2, { requireSignedOffer: false }),
      signedList.slice(1),
      merchantsOf([...ENTRIES, "zz.evil.example"], CAPS, PAYEES, ["weather.xyz"]),
    ];
    for (const [i, other] of others.entries()) {
      await expect(f.update(policyWith(signedList), policyWith(other)), `list ${i}`).to.be.revertedWithCustomError(
        f.policy,
        "SpendPolicyInvalidSignature",
      );
    }
  });

  it("takes a policy signed by viem (what MetaMask's eth_signTypedData_v4 signs too): the same EIP-712 hash, array of structs included", async function () {
    const f = await loadFixture(fixture);
    const key = ethers.Wallet.createRandom();
    const account = privateKeyToAccount(key.privateKey as `0x${string}`);
    // An agent whose owner signs with viem.
    const signer = ethers.Wallet.createRandom().address;
    const predicted = await f.factory.predictAgent(signer, ethers.ZeroAddress);
    const values = policyWith(signedList);
    const timestamp = await nextTimestamp();
    const signature = await account.signTypedData({
      domain: { name: "SpendGate", version: "1", chainId: 8453, verifyingContract: predicted as `0x${string}` },
      types: SET_POLICY_TYPES,
      primaryType: "SetPolicy",
      message: { agent: predicted, ...values, timestamp },
    });
    await expect(f.factory.connect(f.operator).deployAgent(signer, key.address, false, values, timestamp, signature)).to.emit(
      f.factory,
      "AgentDeployed",
    );
  });

  it("enforces no list but the one signed at the first deployment either", async function () {
    const { factory, operator, owner } = await loadFixture(fixture);
    const signer = ethers.Wallet.createRandom().address;
    const predicted = await factory.predictAgent(signer, ethers.ZeroAddress);
    const ts = await nextTimestamp();
    const sig = await signSetPolicy(owner, predicted, predicted, policyWith(signedList), ts);
    const forged = policyWith(
      merchantsOf(ENTRIES, CAPS, { ...PAYEES, "*.data.io": "0x00000000000000000000000000000000000bad00" }, ["weather.xyz"]),
    );
    const implementation = await ethers.getContractAt("SpendPolicy", await factory.implementation());
    await expect(factory.connect(operator).deployAgent(signer, owner.address, false, forged, ts, sig)).to.be.revertedWithCustomError(
      implementation,
      "SpendPolicyInvalidSignature",
    );
    await expect(factory.connect(operator).deployAgent(signer, owner.address, false, policyWith(signedList), ts, sig)).to.emit(
      factory,
      "AgentDeployed",
    );
    const agent = await ethers.getContractAt("SpendPolicy", predicted);
    expect((await agent.policy()).allowlistRoot).to.equal(allowlistRoot(ENTRIES, CAPS, PAYEES));
  });

  it("logs the list exactly as signed and the root it derived, which allowlistRootOf (a view) also answers", async function () {
    const f = await loadFixture(fixture);
    const values = policyWith(signedList);
    const root = allowlistRoot(ENTRIES, CAPS, PAYEES);
    const ts = await nextTimestamp();
    const sig = await signSetPolicy(f.owner, f.policyAddress, f.agent, values, ts);
    await expect(f.policy.connect(f.other).updatePolicy(values, ts, sig))
      .to.emit(f.policy, "PolicyUpdated")
      .withArgs(f.agent, 2n, policyTuple(values), root, ts, sig);
    const module = await ethers.getContractAt("SpendPolicyUpdates", await moduleOf(f.factory));
    expect(await module.allowlistRootOf(signedList)).to.equal(root);
    expect(await module.allowlistRootOf([])).to.equal(ethers.ZeroHash);
  });

  it("refuses an entry that is no normalised host name (a twin the wallet could show as another), naming its index", async function () {
    const f = await loadFixture(fixture);
    const m = (entry: string): MerchantFields => ({ entry, dailyCap: 0n, payee: ANY_PAYEE, requireSignedOffer: false });
    const long = "a".repeat(40);
    const refused = [
      "",
      "API.example.com",
      "api.example.com\u200b",
      "api.exam\u0440le.com", // a Cyrillic r
      "api.example.com.",
      "*.",
      "*x.com",
      "**",
      "a_b.com",
      "a b.com",
      "a/b.com",
      `${long}.com:`, // past the first 32 bytes
      `${long}${long}Z.com`,
    ];
    for (const bad of refused) {
      await expect(
        f.update(policyWith([m("0.com"), m(bad)].sort((x, y) => Buffer.compare(Buffer.from(x.entry), Buffer.from(y.entry))))),
        bad,
      )
        .to.be.revertedWithCustomError(f.updates, "SpendPolicyMerchantNotHostName")
        .withArgs(bad < "0.com" ? 0 : 1);
    }
    // What the service, the dashboard and the CLI sign: every normalised entry passes.
    const accepted = ["*", "*.xn--bcher-kva.example", "0.com", "a-1.example.com", `${long}.${long}.${long}.com`, "127.0.0.1"]
      .map((e) => normalizeAllowlistEntry(e)!)
      .sort();
    await expect(f.update(policyWith(accepted.map(m)))).to.emit(f.policy, "PolicyUpdated");
  });

  it("refuses entries out of byte order or repeated, naming the first such index", async function () {
    const f = await loadFixture(fixture);
    const m = (entry: string): MerchantFields => ({ entry, dailyCap: 0n, payee: ANY_PAYEE, requireSignedOffer: false });
    const cases: [MerchantFields[], number][] = [
      [[m("b.com"), m("a.com")], 1],
      [[m("a.com"), m("a.com")], 1],
      [[m("a.com"), m("a.co")], 1], // a proper prefix sorts first
      [[m("a.com"), m("b.com"), m("c.com"), m("bb.com")], 3],
    ];
    for (const [list, index] of cases) {
      await expect(f.update(policyWith(list)))
        .to.be.revertedWithCustomError(f.updates, "SpendPolicyMerchantsNotSorted")
        .withArgs(index);
    }
    await expect(f.update(policyWith([m("*"), m("*.a.com"), m("a.co"), m("a.com"), m("a.com.x")]))).to.emit(f.policy, "PolicyUpdated");
  });

  it(`accepts ${MAX_MERCHANTS} entries and refuses one more`, async function () {
    const f = await loadFixture(fixture);
    const hosts = (n: number) => Array.from({ length: n }, (_, i) => `host${String(i).padStart(3, "0")}.example.com`);
    await expect(f.update(policyWith(merchantsOf(hosts(MAX_MERCHANTS))))).to.emit(f.policy, "PolicyUpdated");
    expect((await f.policy.policy()).allowlistRoot).to.equal(allowlistRoot(hosts(MAX_MERCHANTS)));
    await expect(f.update(policyWith(merchantsOf(hosts(MAX_MERCHANTS + 1)))))
      .to.be.revertedWithCustomError(f.updates, "SpendPolicyTooManyMerchants")
      .withArgs(MAX_MERCHANTS + 1, MAX_MERCHANTS);
  });

  it("refuses a wildcard with any payee that admits a pinned entry (it would undo the pin), naming both", async function () {
    const f = await loadFixture(fixture);
    const refused: [string[], Record<string, string>, number, number][] = [
      [["*.example.com", "api.example.com"], { "api.example.com": P }, 0, 1],
      [["*", "weather.xyz"], { "weather.xyz": P }, 0, 1],
      [["*.example.com", "*.api.example.com"], { "*.api.example.com": P }, 1, 0], // signed sorted: "*.api…" first
    ];
    for (const [entries, payees, open, pinned] of refused) {
      await expect(f.update(policyWith(merchantsOf(entries, {}, payees))))
        .to.be.revertedWithCustomError(f.updates, "SpendPolicyMerchantOverlap")
        .withArgs(open, pinned);
    }
    // A pinned wildcard over an open host, an open wildcard elsewhere, everything pinned: all fine.
    for (const [entries, payees] of [
      [["*.example.com", "api.example.com"], { "*.example.com": P }],
      [["*.other.org", "api.example.com"], { "api.example.com": P }],
      [["*", "api.example.com"], { "*": P, "api.example.com": Q }],
    ] as const) {
      await expect(f.update(policyWith(merchantsOf(entries, {}, payees)))).to.emit(f.policy, "PolicyUpdated");
    }
  });

  it("refuses a daily cap past 64 bits", async function () {
    const f = await loadFixture(fixture);
    await expect(f.update(policyWith(merchantsOf(["a.com"], { "a.com": 2n ** 64n })))).to.be.revertedWithCustomError(
      f.updates,
      "SpendPolicyInvalidPolicy",
    );
  });

  it("runs only inside a wallet: the module itself refuses, and a wallet never forwards it anything but updatePolicy", async function () {
    const f = await loadFixture(fixture);
    const module = await ethers.getContractAt("SpendPolicyUpdates", await moduleOf(f.factory));
    const ts = await nextTimestamp();
    await expect(module.updatePolicy(DEFAULT_POLICY, ts, "0x")).to.be.revertedWithCustomError(module, "SpendPolicyDelegateOnly");
    await expect(module.initialize(f.owner.address, f.operator.address, DEFAULT_POLICY, ts, "0x")).to.be.revertedWithCustomError(
      module,
      "SpendPolicyDelegateOnly",
    );
    // On a deployed wallet, initialize is the wallet's own (factory only), never the module's.
    await expect(f.policy.connect(f.operator).initialize(f.owner.address, f.operator.address, DEFAULT_POLICY, ts, "0x"))
      .to.be.revertedWithCustomError(f.policy, "SpendPolicyUnauthorizedDeployer")
      .withArgs(f.operator.address);
    // A second agent deploys as the first did (the implementation's module address is the same for every clone).
    await deployAgentFor(f.factory, f.operator, ethers.Wallet.createRandom().address, f.owner.address, f.owner);
  });

  it("names the leaf the operator presented in PaymentBlocked (entry, cap, payee), and none when it presented none", async function () {
    const f = await loadFixture(fixture);
    await (await f.update(policyWith(signedList))).wait();
    const { leaf, proof } = proofFor(ENTRIES, "api.example.com", CAPS, PAYEES);
    const id = paymentId();
    // To another payee than the pinned one: payee_not_allowed, judged on the leaf presented.
    const tx = f.policy.connect(f.operator).authorizePayment(id, "api.example.com", leaf, proof, await transferOf(usdc(1), Q), NO_APPROVAL);
    await expect(tx)
      .to.emit(f.policy, "PaymentBlocked")
      .withArgs(id, f.agent, ethers.id("api.example.com"), "api.example.com", usdc(1), 14, "api.example.com", usdc(2), P);
    const none = paymentId();
    await expect(f.policy.connect(f.operator).authorizePayment(none, "evil.example", leafOf(""), [], await transferOf(1n, Q), NO_APPROVAL))
      .to.emit(f.policy, "PaymentBlocked")
      .withArgs(none, f.agent, ethers.id("evil.example"), "evil.example", 1n, 1, "", 0n, ANY_PAYEE);
  });
});

/** The SpendPolicyUpdates the factory's implementation delegates to (its constructor argument, from Configured). */
async function moduleOf(factory: SpendPolicyFactory): Promise<string> {
  const [configured] = await factory.queryFilter(factory.filters.Configured());
  return configured.args.updates;
}
