import { expect } from "chai";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { leafMatches, proveMerchant, merchantsOf } from "../../src/policy/allowlist";
import {
  authorizedArgs,
  ALLOWLIST,
  ANY_PAYEE,
  NO_APPROVAL,
  leafOf,
  paymentId,
  policyFixture,
  proofFor,
  transferOf,
  blockedArgs,
} from "../helpers/policyFixture";

/** Where the authorised transfers pay (any address but the wallet). */
const PAYEE = "0x00000000000000000000000000000000000bee01";

const Allow = 0n;
const Block = 2n;

describe("SpendPolicy allowlist", function () {
  it("allows a merchant equal to an exact leaf", async function () {
    const { policy, agent, pay } = await loadFixture(policyFixture);
    const id = paymentId();
    await expect(pay(1n, "weather.xyz", { id }))
      .to.emit(policy, "PaymentAuthorized")
      .withArgs(...authorizedArgs(id, agent, "weather.xyz", 1n));
  });

  it("lets *.domain admit sub.domain and a.b.domain", async function () {
    const { policy, pay } = await loadFixture(policyFixture);
    for (const merchant of ["sub.data.io", "a.b.data.io"]) {
      expect(proofFor(ALLOWLIST, merchant).leaf.entry).to.equal("*.data.io");
      await expect(pay(1n, merchant)).to.emit(policy, "PaymentAuthorized");
    }
  });

  it("does not let *.domain admit domain itself or evil-domain, and blocks them with reason 1", async function () {
    const { policy, agent, operator } = await loadFixture(policyFixture);
    const { proof } = proveMerchant(ALLOWLIST, "sub.data.io")!;
    // ".data.io" ends in the suffix but is not longer than it (and is no host): refused like leafMatches() does.
    for (const merchant of ["data.io", "evildata.io", "evil-data.io", "data.io.evil.com", ".data.io"]) {
      const id = paymentId();
      await expect(
        policy.connect(operator).authorizePayment(id, merchant, leafOf("*.data.io", 0n), proof, await transferOf(1n, PAYEE), NO_APPROVAL),
      )
        .to.emit(policy, "PaymentBlocked")
        .withArgs(...blockedArgs(id, agent, merchant, 1n, 1));
    }
  });

  it("lets * admit any merchant", async function () {
    const { policy, pay, setPolicy } = await loadFixture(policyFixture);
    const entries = ["*"];
    await setPolicy({ merchants: merchantsOf(entries) });
    for (const merchant of ["anything.example", "x.y.z.w", "localhost"]) {
      await expect(pay(1n, merchant, { entries })).to.emit(policy, "PaymentAuthorized");
    }
  });

  it("denies everything with an empty allowlist (zero root), even a * leaf", async function () {
    const { policy, agent, operator, pay, setPolicy } = await loadFixture(policyFixture);
    await setPolicy({ merchants: [] });
    const id = paymentId();
    await expect(pay(1n, "api.example.com", { id }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, "api.example.com", 1n, 1));
    const id2 = paymentId();
    await expect(
      policy.connect(operator).authorizePayment(id2, "api.example.com", leafOf("*", 0n), [], await transferOf(1n, PAYEE), NO_APPROVAL),
    )
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id2, agent, "api.example.com", 1n, 1));
  });

  it("denies a leaf with a wrong or empty proof", async function () {
    const { policy, agent, operator } = await loadFixture(policyFixture);
    const { proof } = proveMerchant(ALLOWLIST, "weather.xyz")!;
    const tampered = [...proof];
    tampered[0] = "0x" + "11".repeat(32);
    for (const badProof of [proof, tampered, []]) {
      const id = paymentId();
      // `proof` proves weather.xyz, not api.example.com.
      await expect(
        policy
          .connect(operator)
          .authorizePayment(id, "api.example.com", leafOf("api.example.com", 0n), badProof, await transferOf(1n, PAYEE), NO_APPROVAL),
      )
        .to.emit(policy, "PaymentBlocked")
        .withArgs(...blockedArgs(id, agent, "api.example.com", 1n, 1));
    }
  });

  it("denies a valid leaf that does not admit the merchant", async function () {
    const { policy, agent, operator } = await loadFixture(policyFixture);
    const { leaf, proof } = proveMerchant(ALLOWLIST, "api.example.com")!;
    const id = paymentId();
    await expect(
      policy.connect(operator).authorizePayment(id, "weather.xyz", leafOf(leaf), proof, await transferOf(1n, PAYEE), NO_APPROVAL),
    )
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, "weather.xyz", 1n, 1));
  });

  it("denies a merchant that is not in the allowlist at all", async function () {
    const { policy, agent, pay } = await loadFixture(policyFixture);
    const id = paymentId();
    await expect(pay(1n, "evil.example.net", { id }))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, "evil.example.net", 1n, 1));
  });

  it("never admits an empty merchant, even under *", async function () {
    const { policy, agent, operator, setPolicy } = await loadFixture(policyFixture);
    await setPolicy({ merchants: merchantsOf(["*"]) });
    const { proof } = proveMerchant(["*"], "any.host")!;
    const id = paymentId();
    await expect(policy.connect(operator).authorizePayment(id, "", leafOf("*", 0n), proof, await transferOf(1n, PAYEE), NO_APPROVAL))
      .to.emit(policy, "PaymentBlocked")
      .withArgs(...blockedArgs(id, agent, "", 1n, 1));
  });

  it("agrees with leafMatches() of src/policy/allowlist.ts on every leaf and merchant pair", async function () {
    const { policy, setPolicy } = await loadFixture(policyFixture);
    const leaves = ["*", "*.data.io", "data.io", "api.example.com", "*.io", "*.a.b.c", "x"];
    const merchants = [
      "data.io",
      "sub.data.io",
      "a.b.data.io",
      "evildata.io",
      "api.example.com",
      "api.example.co",
      "example.com",
      "io",
      "x",
      "xx",
      "d.a.b.c",
      "a.b.c",
    ];
    await setPolicy({ merchants: merchantsOf(leaves) });
    for (const leaf of leaves) {
      const proof = proofOfLeaf(leaves, leaf);
      for (const merchant of merchants) {
        const [decision] = await policy.checkPayment(merchant, leafOf(leaf), proof, ANY_PAYEE, 1n);
        const expected = leafMatches(leaf, merchant) ? Allow : Block;
        expect(decision).to.equal(expected, `leaf ${leaf} merchant ${merchant}`);
      }
    }
  });
});

/** The proof of one leaf in the StandardMerkleTree of `entries` (as allowlistRoot() builds it: no caps, any payee). */
function proofOfLeaf(entries: string[], leaf: string): string[] {
  const tree = StandardMerkleTree.of(
    entries.map((e) => [e, "0", ANY_PAYEE]),
    ["string", "uint256", "address"],
  );
  for (const [i, value] of tree.entries()) if (value[0] === leaf) return tree.getProof(i);
  throw new Error(`${leaf} not in tree`);
}
