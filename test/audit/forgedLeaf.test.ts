/**
 * A leaf the owner never signed: the contract derives its allowlist root from the signed entries, so a payment can be
 * proved with another leaf only if the root in storage was written behind the contract's back (here: hardhat_setStorageAt,
 * standing for a broken contract or chain). The audit holds every PaymentAuthorized's leaf against the list the owner
 * signed in force (PolicyUpdated carries it), names the stranger and exits 1.
 */
import { expect } from "chai";
import { Wallet, getAddress } from "ethers";
import { allowlistRoot, leafStruct, proveMerchant } from "../../src/policy/allowlist";
import { auditOutput, runAudit } from "../helpers/auditCli";
import { mintUsdc } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { NO_APPROVAL } from "../helpers/attackerBase";
import { rootSlot } from "../helpers/policyFixture";

const USDC = 1_000_000n;

describe("audit: an authorisation under a leaf outside the signed list", () => {
  const { s } = stackPerFile({ LOG_LEVEL: "silent" });

  it("names the leaf and the policy it is missing from, and npm run audit exits 1", async function () {
    this.timeout(120_000);
    const owner = randomOwner();
    const payee = Wallet.createRandom().address;
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], payees: { "127.0.0.1": payee } });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const { provider } = s.svc.chain;
    // The forged list pays a thief under the same entry; its root goes where the signed one was.
    const thief = getAddress(Wallet.createRandom().address);
    const signed = allowlistRoot(["127.0.0.1"], {}, { "127.0.0.1": payee });
    const forged = proveMerchant(["127.0.0.1"], "127.0.0.1", {}, { "127.0.0.1": thief })!;
    await provider.send("hardhat_setStorageAt", [
      a.agentAddress,
      await rootSlot(a.agentAddress, signed, provider),
      allowlistRoot(["127.0.0.1"], {}, { "127.0.0.1": thief }),
    ]);
    const operator = new Wallet(s.svc.config.operatorPrivateKey, provider);
    const wallet = s.svc.chain.policyAt(a.agentAddress, operator);
    const now = (await provider.getBlock("latest"))!.timestamp;
    const paymentId = `0x${"5a".repeat(32)}`;
    await (
      await wallet.authorizePayment(
        paymentId,
        "127.0.0.1",
        leafStruct(forged),
        forged.proof,
        { payTo: thief, amount: USDC, validAfter: 0n, validBefore: BigInt(now + 600) },
        NO_APPROVAL,
      )
    ).wait();

    const cli = await runAudit(s);
    expect(cli.code, cli.stderr).to.equal(1);
    const { report, summary } = auditOutput(cli.stdout);
    expect(summary).to.match(/^audit: \d+ agents, \d+ events, [1-9]\d* anomal/);
    expect(report.inconsistencies).to.include(
      `${a.agentAddress} ${paymentId}: authorised under leaf "127.0.0.1" (cap 0, payee ${thief}), which is not in the list the owner signed in policy 1`,
    );
  });
});
