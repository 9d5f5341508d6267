import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { allowlistRoot } from "../../src/policy/allowlist";
import {
  DEFAULT_POLICY, NO_APPROVAL, ANY_PAYEE, paymentId, policyFixture, proofFor, signTransfer, transferOf, nextTimestamp, signSetPaused,
} from "../helpers/policyFixture";

const { ethers } = hre;
const INVALID = "0xffffffff";

function host(len: number, tag = "a"): string {
  // a host name of exactly `len` chars ending in ".io" when long enough
  if (len <= 3) return tag.repeat(len);
  return tag.repeat(len - 3) + ".io";
}

describe("zz review: PaymentAuthorized encoding, calldata, leaf forms, same-block pause", function () {
  it("PaymentAuthorized data equals the canonical ABI encoding for odd merchant/entry lengths", async () => {
    const f = await loadFixture(policyFixture);
    const iface = f.policy.interface;
    const P = f.merchant.address;
    const coder = ethers.AbiCoder.defaultAbiCoder();
    const cases: [string, string][] = [];
    for (const L of [1, 31, 32, 33, 64, 65, 95]) cases.push([host(L), "*"]);
    for (const L of [31, 32, 33, 64]) cases.push([host(L), host(L)]);
    for (const L of [31, 32, 33, 64]) { const suf = "." + "b".repeat(L - 5) + ".io"; cases.push(["x" + suf, "*" + suf]); cases.push(["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + suf, "*" + suf]); }
    let n = 0;
    for (const [merchant, entry] of cases) {
      const payees = { [entry]: P };
      const caps = { [entry]: 100000n + BigInt(n) };
      const entries = [entry, "filler.example"];
      await f.setPolicy({ allowlistRoot: allowlistRoot(entries, caps, "v3", payees), dailyBudget: 10n ** 12n, perTxLimit: 10n ** 9n });
      const { leaf, proof } = proofFor(entries, merchant, caps, "v3", payees);
      expect(leaf.entry).to.equal(entry);
      const t = await transferOf(1n + BigInt(n), P);
      t.validAfter = 3n + BigInt(n);
      const id = paymentId();
      const ret = await f.policy.connect(f.operator).authorizePayment.staticCall(id, merchant, leaf, proof, t, NO_APPROVAL);
      expect(ret[0], `${merchant}|${entry}|reason ${ret[1]}`).to.equal(true);
      const rc = await (await f.policy.connect(f.operator).authorizePayment(id, merchant, leaf, proof, t, NO_APPROVAL)).wait();
      const log = rc!.logs.find((l) => l.topics[0] === iface.getEvent("PaymentAuthorized")!.topicHash)!;
      const parsed = iface.parseLog(log)!;
      const spent = await f.policy.spentToday();
      const epoch = await f.policy.epoch();
      const expected = coder.encode(
        ["string", "address", "uint256", "uint256", "uint256", "uint256", "uint256", "string", "uint256", "address"],
        [merchant, P, t.amount, t.validAfter, t.validBefore, spent, epoch, entry, caps[entry], P],
      );
      expect(log.data, `${merchant.length}/${entry.length}`).to.equal(expected);
      expect(parsed.args.merchant).to.equal(merchant);
      expect(parsed.args.leafEntry).to.equal(entry);
      expect(log.topics[3]).to.equal(ethers.id(merchant));
      // state intact: record answers the wallet signature
      const digest = await f.policy.transferDigest(id, t);
      expect(await f.policy.isValidSignature(digest, await signTransfer(f.agentKey, f.token, f.agent, id, t))).to.equal("0x1626ba7e");
      n++;
    }
  });

  it("dirty address bits in leaf.payee / transfer.payTo revert (no cleaned-payee confusion)", async () => {
    const f = await loadFixture(policyFixture);
    const P = f.merchant.address;
    const entries = ["api.example.com"];
    const payees = { "api.example.com": P };
    await f.setPolicy({ allowlistRoot: allowlistRoot(entries, {}, "v3", payees) });
    const { leaf, proof } = proofFor(entries, "api.example.com", {}, "v3", payees);
    const t = await transferOf(1n, P);
    const id = paymentId();
    const data = f.policy.interface.encodeFunctionData("authorizePayment", [id, "api.example.com", leaf, proof, t, NO_APPROVAL]);
    const hex = data.slice(2);
    const pWord = P.slice(2).toLowerCase().padStart(64, "0");
    const at: number[] = [];
    for (let i = 8; i < hex.length; i += 64) if (hex.slice(i, i + 64) === pWord) at.push(i);
    expect(at.length).to.equal(2);
    const op = f.policy.connect(f.operator);
    for (const i of at) {
      const dirty = "0x" + hex.slice(0, i) + "ff" + hex.slice(i + 2);
      let reverted = false;
      try { await op.runner!.sendTransaction!({ to: f.agent, data: dirty }).then((x) => x.wait()); } catch { reverted = true; }
      expect(reverted, `dirty word at ${i}`).to.equal(true);
    }
  });

  it("no payee-0 leaf form proves against a root whose every v3 leaf has a payee", async () => {
    const f = await loadFixture(policyFixture);
    const P = f.merchant.address;
    const entries = ["api.example.com", "*.data.io", "*"];
    const payees = Object.fromEntries(entries.map((e) => [e, P]));
    await f.setPolicy({ allowlistRoot: allowlistRoot(entries, {}, "v3", payees) });
    const thief = ethers.Wallet.createRandom().address;
    const good = proofFor(entries, "api.example.com", {}, "v3", payees);
    const t = await transferOf(1n, thief);
    const tree = StandardMerkleTree.of(entries.map((e) => [e, "0", P]), ["string", "uint256", "address"]);
    const tries: [any, string[]][] = [
      [{ ...good.leaf, payee: ANY_PAYEE }, good.proof],
      [{ ...good.leaf, payee: thief }, good.proof],
      [{ entry: "api.example.com", dailyCap: 0n, payee: ANY_PAYEE }, []],
      [{ entry: "*", dailyCap: 0n, payee: ANY_PAYEE }, tree.getProof(2)],
    ];
    // internal nodes as "leaves" with proofs of siblings
    for (const [leaf, proof] of tries) {
      const [ok, reason] = await f.policy.connect(f.operator).authorizePayment.staticCall(paymentId(), "api.example.com", leaf, proof, t, NO_APPROVAL);
      expect(ok).to.equal(false);
      expect(Number(reason)).to.be.oneOf([1, 14]);
    }
  });

  it("a payment authorised in the same block before a pause never settles", async () => {
    const f = await loadFixture(policyFixture);
    const P = f.merchant.address;
    const id = paymentId();
    const t = await transferOf(1_000_000n, P);
    const { leaf, proof } = proofFor(["api.example.com", "*.data.io", "weather.xyz", "news.example.org", "*.maps.dev"], "api.example.com");
    const ts = await nextTimestamp();
    const sig = await signSetPaused(f.owner, f.agent, f.agent, true, ts, 0n);
    await hre.network.provider.send("evm_setAutomine", [false]);
    const a = await f.policy.connect(f.operator).authorizePayment(id, "api.example.com", leaf, proof, t, NO_APPROVAL);
    const p = await f.policy.connect(f.other).setPaused(true, 0n, ts, sig);
    await hre.network.provider.send("evm_mine");
    await hre.network.provider.send("evm_setAutomine", [true]);
    expect((await a.wait())!.blockNumber).to.equal((await p.wait())!.blockNumber);
    const digest = await f.policy.transferDigest(id, t);
    expect(await f.policy.isValidSignature(digest, await signTransfer(f.agentKey, f.token, f.agent, id, t))).to.equal(INVALID);
  });
});
