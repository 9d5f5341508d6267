/**
 * A seller's PAYMENT-RESPONSE is its word, checked on-chain: the transaction it names must carry USDC's
 * AuthorizationUsed for this payment. A hostile seller (here a proxy in front of a real x402 seller that rewrites the
 * header) names another mined transaction: when the payment did settle, the answer carries the real settlement found
 * on-chain; when it did not, the payment is released and nothing moved.
 */
import { expect } from "chai";
import { encodePaymentResponseHeader } from "@x402/core/http";
import { stackPerFile, randomOwner } from "../helpers/stack";
import { spentToday } from "../helpers/payments";
import { withSeller, mintUsdc, usdcBalance } from "../helpers/sellers";
import { listen } from "../helpers/sellerServer";

const USDC = 1_000_000n;

/** Forwards to `target`; a paid request is forwarded only when `settle`, and its answer names `claim` as the settlement. */
async function startLyingSeller(target: string, opts: { settle: boolean; claim: () => string }) {
  const forged = (tx: string) =>
    encodePaymentResponseHeader({ success: true, transaction: tx, network: "eip155:8453", payer: "0x" + "11".repeat(20) });
  const listener = await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const paid = typeof req.headers["payment-signature"] === "string";
    if (paid && !opts.settle) {
      res.writeHead(200, { "Content-Type": "application/json", "PAYMENT-RESPONSE": forged(opts.claim()) }).end('{"data":"free"}');
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers[k] = v;
    const r = await fetch(target, { method: req.method, headers, body: body.length ? body : undefined });
    const out: Record<string, string> = {};
    r.headers.forEach((v, k) => {
      if (!["content-length", "content-encoding", "transfer-encoding", "connection"].includes(k)) out[k] = v;
    });
    if (paid && r.headers.get("payment-response")) out["payment-response"] = forged(opts.claim());
    res.writeHead(r.status, out).end(Buffer.from(await r.arrayBuffer()));
  });
  return { url: `${listener.url}/resource`, close: listener.close };
}

describe("a seller that names another transaction as its settlement", function () {
  this.timeout(60_000);
  const { s, seller } = withSeller(stackPerFile(), USDC);
  /** A mined transaction that is no settlement of anything: a USDC mint. */
  let unrelatedTx: string;

  before(async () => {
    const { receipt } = await s.svc.chain.sendAndWait((o) => s.svc.chain.usdc.connect(s.svc.chain.operator).mint(seller.payTo, 1n, o));
    unrelatedTx = receipt.hash;
  });

  async function agent() {
    const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, a.agentAddress, 5n * USDC);
    return a;
  }
  const pay = (a: { agentAddress: string; apiKey: string }, serviceUrl: string) =>
    s.api("POST", "/pay", { key: a.apiKey, body: { agentAddress: a.agentAddress, serviceUrl, maxAmount: "5", intent: "lying seller" } });

  it("settled, but names an unrelated transaction: 200 with the real settlement found on-chain", async () => {
    const liar = await startLyingSeller(seller.resource, { settle: true, claim: () => unrelatedTx });
    try {
      const a = await agent();
      const res = await pay(a, liar.url);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.txHash).to.not.equal(unrelatedTx);
      const receipt = await s.svc.chain.provider.getTransactionReceipt(res.body.txHash);
      expect(receipt?.to?.toLowerCase(), "the settlement is a USDC transaction").to.equal(s.svc.config.usdcAddress.toLowerCase());
      expect(await usdcBalance(s, a.agentAddress)).to.equal(4n * USDC);
    } finally {
      await liar.close();
    }
  });

  it("never settled, and claims a mined transaction: 502, the budget released, nothing moved", async () => {
    const liar = await startLyingSeller(seller.resource, { settle: false, claim: () => unrelatedTx });
    try {
      const a = await agent();
      const res = await pay(a, liar.url);
      expect(res.status, JSON.stringify(res.body)).to.equal(502);
      expect(res.body.error).to.equal("upstream_error");
      expect(await usdcBalance(s, a.agentAddress)).to.equal(5n * USDC);
      expect(await spentToday(s, a.policyContract)).to.equal(0n);
    } finally {
      await liar.close();
    }
  });
});
