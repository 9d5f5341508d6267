/**
 * A merchant name that is not UTF-8: the contract takes any bytes as `merchant` (a wildcard entry admits any bytes
 * before its suffix), and the operator chooses them. A stolen server that authorises a payment (or has one blocked)
 * under such a name leaves a log that ethers cannot decode as text. The audit must still report every agent and name
 * that payment; it must not stop (no report at all is what the thief wants) nor skip the log (a payment the auditor
 * never sees). Nor may the service's indexer stop at it: every later event of every agent would never be read.
 */
import { expect } from "chai";
import { Wallet, getAddress, hexlify, toUtf8Bytes } from "ethers";
import { leafStruct, proveMerchant } from "../../src/policy/allowlist";
import { auditOutput, runAudit } from "../helpers/auditCli";
import { mintUsdc } from "../helpers/sellers";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { NO_APPROVAL } from "../helpers/attackerBase";

const USDC = 1_000_000n;

describe("audit: a merchant name that is not UTF-8", () => {
  const { s } = stackPerFile({ LOG_LEVEL: "silent" });

  it("a payment authorised under it is still in the report, named, and npm run audit exits 1", async function () {
    this.timeout(120_000);
    const owner = randomOwner();
    const payee = getAddress(Wallet.createRandom().address);
    const a = await s.onboard(owner, { allowlist: ["*.example.com"], payees: { "*.example.com": payee } });
    await mintUsdc(s, a.agentAddress, 10n * USDC);
    const { provider } = s.svc.chain;
    const operator = new Wallet(s.svc.config.operatorPrivateKey, provider);
    const wallet = s.svc.chain.policyAt(a.agentAddress, operator);
    const proved = proveMerchant(["*.example.com"], "shop.example.com", {}, { "*.example.com": payee })!;
    const now = (await provider.getBlock("latest"))!.timestamp;
    const paymentId = `0x${"6b".repeat(32)}`;
    // "~.example.com" encoded, then its first byte made 0xff: the leaf still admits it ("*.example.com" matches any
    // bytes before ".example.com"), and no UTF-8 decoder reads it.
    const placeholder = hexlify(toUtf8Bytes("~.example.com")).slice(2);
    const data = wallet.interface
      .encodeFunctionData("authorizePayment", [
        paymentId,
        "~.example.com",
        leafStruct(proved),
        proved.proof,
        { payTo: payee, amount: USDC, validAfter: 0n, validBefore: BigInt(now + 600) },
        NO_APPROVAL,
      ])
      .replace(placeholder, `ff${placeholder.slice(2)}`);
    const receipt = (await (await operator.sendTransaction({ to: a.agentAddress, data })).wait())!;
    const authorized = receipt.logs.find((l) => l.topics[0] === wallet.interface.getEvent("PaymentAuthorized").topicHash);
    expect(authorized, "the contract authorised the payment").to.not.equal(undefined);

    const cli = await runAudit(s);
    expect(cli.stdout, `no report: ${cli.stderr}`).to.match(/^audit: /m);
    expect(cli.code, cli.stderr).to.equal(1);
    const { report } = auditOutput(cli.stdout);
    expect(JSON.stringify(report)).to.include(paymentId);
  });

  it("the service's own indexer reads past it (an honest instance, after the stolen one, must not stall there)", async function () {
    this.timeout(60_000);
    await s.svc.indexer.stop();
    let failure: string | null = null;
    await s.svc.indexer.syncOnce().catch((err: unknown) => (failure = err instanceof Error ? err.message : "the run failed"));
    expect(failure).to.equal(null);
  });
});
