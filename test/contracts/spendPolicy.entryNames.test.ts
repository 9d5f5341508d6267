/**
 * What the owner's wallet shows of an entry is its text, and the contract takes any bytes as an entry (sorted, not
 * empty, at most 255). The service, the dashboard and the CLI sign only normalised host names ("host", "*.host", "*":
 * lower-case ASCII letters, digits, dots and hyphens), but a page the server serves builds the typed data itself. An
 * entry the prompt cannot tell apart from another (an invisible character, say) then carries a payee of its own: the
 * owner reads "api.example.com, pays only P" twice, once with payee 0, and signs a list that pays anyone. A contract
 * that took only normalised entries (the list is "normalised and sorted", DESIGN §4c) would refuse it.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { merchantsOf } from "../../src/policy/allowlist";
import { DEFAULT_POLICY, policyFixture, transferOf, usdc } from "../helpers/policyFixture";

const { ethers } = hre;
const P = "0x00000000000000000000000000000000000bee01";

describe("SpendPolicy entries: only normalised host names are signed and enforced (review of issue 36)", function () {
  it("refuses an entry that is no host name (here: a pinned entry's name and a zero-width space, with any payee)", async function () {
    const f = await loadFixture(policyFixture);
    const twin = "api.example.com\u200b"; // shown as "api.example.com"
    const entries = ["api.example.com", twin];
    const payees = { "api.example.com": P };
    const thief = ethers.Wallet.createRandom().address;
    const set = await f
      .setPolicy({ ...DEFAULT_POLICY, merchants: merchantsOf(entries, {}, payees) })
      .then(() => true)
      .catch(() => false);
    // Refused (expected), or taken: then a payment "to api.example.com" pays the thief.
    const paid = set
      ? await f
          .pay(usdc(1), twin, { entries, payees, transfer: await transferOf(usdc(1), thief) })
          .then((tx) => tx.wait())
          .then((r) => r!.logs.some((l) => f.policy.interface.parseLog(l)?.name === "PaymentAuthorized"))
      : false;
    expect({ set, paid }).to.deep.equal({ set: false, paid: false });
  });
});
