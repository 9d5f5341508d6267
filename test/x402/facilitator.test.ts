import { expect } from "chai";
import { Contract, Interface, JsonRpcProvider, Wallet, type TransactionReceipt } from "ethers";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { PaymentPayload, PaymentPayloadV1, PaymentRequired, PaymentRequirements, PaymentRequirementsV1 } from "@x402/core/types";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import {
  contractCodeCache,
  createFacilitator,
  createInProcessFacilitator,
  type AnyPaymentPayload,
  type AnyPaymentRequirements,
  type Facilitator,
  type InProcessFacilitator,
} from "../../src/x402/facilitator";
import { newBuyer, usdcRequirement } from "../helpers/x402Payments";

const USDC_ABI = [
  "function mint(address to, uint256 amount) returns (bool)",
  "function balanceOf(address) view returns (uint256)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
];
const usdcInterface = new Interface(USDC_ABI);

type Authorization = { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };
const authorizationOf = (p: AnyPaymentPayload) => (p.payload as { authorization: Authorization }).authorization;

function usdcAuthorizationsUsed(receipt: TransactionReceipt, usdc: string) {
  return receipt.logs
    .filter((l) => l.address.toLowerCase() === usdc.toLowerCase())
    .map((l) => usdcInterface.parseLog(l))
    .filter((l) => l?.name === "AuthorizationUsed")
    .map((l) => ({ authorizer: l!.args.authorizer as string, nonce: l!.args.nonce as string }));
}

describe("x402 facilitator (in-process, real x402 v2) against TestUSDC at the Base USDC address", function () {
  let chain: EmbeddedChain;
  let provider: JsonRpcProvider;
  let usdc: Contract;
  let facilitator: InProcessFacilitator;
  const payTo = Wallet.createRandom().address;
  const AMOUNT = 10_000n; // 0.01 USDC

  const requirementsV2 = (overrides: Partial<PaymentRequirements> = {}): PaymentRequirements =>
    usdcRequirement(chain.addresses.usdc, payTo, AMOUNT, overrides);
  const requirementsV1 = (overrides: Partial<PaymentRequirementsV1> = {}): PaymentRequirementsV1 => ({
    scheme: "exact",
    network: "base" as PaymentRequirementsV1["network"], // x402 types every network as CAIP-2; v1 uses names
    maxAmountRequired: AMOUNT.toString(),
    resource: "http://127.0.0.1/sell/agent-intel",
    description: "agent intel",
    mimeType: "application/json",
    outputSchema: {},
    payTo,
    maxTimeoutSeconds: 120,
    asset: chain.addresses.usdc,
    extra: { name: "USD Coin", version: "2" },
    ...overrides,
  });
  const pay = (buyer: ReturnType<typeof newBuyer>, requirements: PaymentRequirements): Promise<PaymentPayload> => {
    const paymentRequired: PaymentRequired = {
      x402Version: 2,
      resource: { url: "http://127.0.0.1/sell/agent-intel" },
      accepts: [requirements],
    };
    return buyer.client.createPaymentPayload(paymentRequired);
  };
  const payV1 = async (buyer: ReturnType<typeof newBuyer>, requirements: PaymentRequirementsV1) =>
    (await buyer.client.createPaymentPayload({
      x402Version: 1,
      accepts: [requirements],
    } as unknown as PaymentRequired)) as unknown as PaymentPayloadV1;

  async function fundedBuyer(amount = 1_000_000n) {
    const buyer = newBuyer();
    await (await usdc.mint(buyer.address, amount)).wait();
    return buyer;
  }
  const balance = async (address: string): Promise<bigint> => usdc.balanceOf(address);

  before(async function () {
    chain = await startEmbeddedChain();
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    // Anyone may mint TestUSDC; the operator key is funded with ETH for gas.
    usdc = new Contract(chain.addresses.usdc, USDC_ABI, new Wallet(chain.operator.privateKey, provider));
    facilitator = createInProcessFacilitator({
      rpcUrl: chain.rpcUrl,
      chainId: chain.chainId,
      privateKey: chain.facilitator.privateKey,
    });
  });

  after(async function () {
    provider?.destroy();
    await chain?.close();
  });

  it("advertises exact on eip155:8453 (v2) and base (v1) with its own signer address", async function () {
    const supported = await facilitator.supported();
    const kinds = supported.kinds.map((k) => `${k.x402Version}:${k.scheme}:${k.network}`);
    expect(kinds).to.have.members(["2:exact:eip155:8453", "1:exact:base"]);
    expect(Object.values(supported.signers).flat()).to.include(chain.facilitator.address);
    expect(facilitator.address).to.equal(chain.facilitator.address);
  });

  it("keeps deployed code (immutable since Cancun) but asks again for no code and for an EIP-7702 delegation", async function () {
    const asked = new Map<string, number>();
    const codeOf = contractCodeCache(async (address) => {
      asked.set(address, (asked.get(address) ?? 0) + 1);
      return (await provider.getCode(address)) as `0x${string}`;
    });
    const token = chain.addresses.usdc as `0x${string}`;
    const eoa = Wallet.createRandom().address as `0x${string}`;
    const delegated = Wallet.createRandom().address as `0x${string}`;
    const designator = `0xef0100${chain.addresses.multicall3.slice(2).toLowerCase()}`;
    await provider.send("hardhat_setCode", [delegated, designator]);
    for (let i = 0; i < 3; i++) {
      expect(await codeOf(token)).to.equal(await provider.getCode(token));
      expect(await codeOf(eoa)).to.equal("0x");
      expect(await codeOf(delegated)).to.equal(designator);
    }
    expect([asked.get(token), asked.get(eoa), asked.get(delegated)]).to.deep.equal([1, 3, 3]);
    // An address without code that gets some (a counterfactual wallet deployed) is seen with it at once.
    await provider.send("hardhat_setCode", [eoa, "0x6000"]);
    expect(await codeOf(eoa)).to.equal("0x6000");
  });

  it("verifies and settles a v2 payment: balances move by exactly the amount and AuthorizationUsed is emitted", async function () {
    const buyer = await fundedBuyer();
    const requirements = requirementsV2();
    const payload = await pay(buyer, requirements);
    expect(payload.x402Version).to.equal(2);
    expect(payload.accepted).to.deep.equal(requirements);
    const auth = authorizationOf(payload);
    const [buyerBefore, payToBefore] = [await balance(buyer.address), await balance(payTo)];

    let t0 = performance.now();
    const verified = await facilitator.verify(payload, requirements);
    const verifyMs = performance.now() - t0;
    expect(verified).to.include({ isValid: true, payer: buyer.address });

    t0 = performance.now();
    const settled = await facilitator.settle(payload, requirements);
    const settleMs = performance.now() - t0;
    console.log(`      (verify ${verifyMs.toFixed(1)} ms, settle ${settleMs.toFixed(1)} ms)`);
    expect(settled.success, JSON.stringify(settled)).to.equal(true);
    expect(settled.transaction).to.match(/^0x[0-9a-f]{64}$/);
    expect(settled).to.include({ network: "eip155:8453", payer: buyer.address });

    expect(await balance(buyer.address)).to.equal(buyerBefore - AMOUNT);
    expect(await balance(payTo)).to.equal(payToBefore + AMOUNT);
    expect(await usdc.authorizationState(buyer.address, auth.nonce)).to.equal(true);

    const receipt = await provider.getTransactionReceipt(settled.transaction);
    expect(receipt?.status).to.equal(1);
    expect(receipt?.from).to.equal(chain.facilitator.address);
    expect(usdcAuthorizationsUsed(receipt!, chain.addresses.usdc)).to.deep.equal([{ authorizer: buyer.address, nonce: auth.nonce }]);
  });

  it("refuses a replay of a settled payload: verify names the used nonce, settle fails and nothing moves", async function () {
    const buyer = await fundedBuyer();
    const requirements = requirementsV2();
    const payload = await pay(buyer, requirements);
    expect((await facilitator.settle(payload, requirements)).success).to.equal(true);
    const [buyerBefore, payToBefore] = [await balance(buyer.address), await balance(payTo)];

    const verified = await facilitator.verify(payload, requirements);
    expect(verified).to.include({ isValid: false, invalidReason: "invalid_exact_evm_nonce_already_used" });

    const settled = await facilitator.settle(payload, requirements);
    expect(settled.success).to.equal(false);
    expect(settled.errorReason).to.equal("invalid_exact_evm_nonce_already_used");
    expect(settled.transaction).to.equal("");
    expect(await balance(buyer.address)).to.equal(buyerBefore);
    expect(await balance(payTo)).to.equal(payToBefore);
  });

  it("refuses a payload signed for another amount or another payee", async function () {
    const buyer = await fundedBuyer();
    const before = await balance(buyer.address);

    const cheaper = await pay(buyer, requirementsV2({ amount: (AMOUNT - 1n).toString() }));
    expect(await facilitator.verify(cheaper, requirementsV2())).to.include({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_authorization_value_mismatch",
    });
    expect((await facilitator.settle(cheaper, requirementsV2())).success).to.equal(false);

    const elsewhere = await pay(buyer, requirementsV2({ payTo: Wallet.createRandom().address }));
    expect(await facilitator.verify(elsewhere, requirementsV2())).to.include({
      isValid: false,
      invalidReason: "invalid_exact_evm_recipient_mismatch",
    });
    expect((await facilitator.settle(elsewhere, requirementsV2())).success).to.equal(false);

    // A payload whose authorisation was edited after signing no longer matches its signature.
    const honest = await pay(buyer, requirementsV2());
    const edited: PaymentPayload = {
      ...honest,
      payload: { ...honest.payload, authorization: { ...authorizationOf(honest), value: (AMOUNT * 2n).toString() } },
    };
    const editedReq = requirementsV2({ amount: (AMOUNT * 2n).toString() });
    expect(await facilitator.verify(edited, editedReq)).to.include({
      isValid: false,
      invalidReason: "invalid_exact_evm_signature",
    });
    expect(await balance(buyer.address)).to.equal(before);
  });

  it("explains an unfunded buyer through Multicall3: insufficient balance", async function () {
    const buyer = newBuyer();
    const requirements = requirementsV2();
    const verified = await facilitator.verify(await pay(buyer, requirements), requirements);
    expect(verified).to.include({ isValid: false, invalidReason: "invalid_exact_evm_insufficient_balance" });
  });

  it("refuses requirements for another chain without touching ours", async function () {
    const buyer = await fundedBuyer();
    const requirements = requirementsV2({
      network: "eip155:84532",
      asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", // Base Sepolia USDC
    });
    const payload = await pay(buyer, requirements);
    expect(await facilitator.verify(payload, requirements)).to.include({ isValid: false, invalidReason: "invalid_network" });
    expect(await facilitator.settle(payload, requirements)).to.include({ success: false, errorReason: "invalid_network" });
  });

  it("verifies and settles a v1 payload (network base)", async function () {
    const buyer = await fundedBuyer();
    const requirements = requirementsV1();
    const payload = await payV1(buyer, requirements);
    expect(payload).to.include({ x402Version: 1, scheme: "exact", network: "base" });
    const before = await balance(payTo);

    expect(await facilitator.verify(payload, requirements)).to.include({ isValid: true, payer: buyer.address });
    const settled = await facilitator.settle(payload, requirements);
    expect(settled.success, JSON.stringify(settled)).to.equal(true);
    expect(settled.network).to.equal("base");
    expect(await balance(payTo)).to.equal(before + AMOUNT);
    const receipt = await provider.getTransactionReceipt(settled.transaction);
    expect(usdcAuthorizationsUsed(receipt!, chain.addresses.usdc)).to.deep.equal([
      { authorizer: buyer.address, nonce: authorizationOf(payload).nonce },
    ]);

    expect(await facilitator.verify(payload, requirements)).to.include({
      isValid: false,
      invalidReason: "invalid_exact_evm_nonce_already_used",
    });
  });

  it("settles concurrent payments from one facilitator key", async function () {
    const buyers = [];
    for (let i = 0; i < 5; i++) buyers.push(await fundedBuyer());
    const requirements = requirementsV2();
    const payloads = await Promise.all(buyers.map((b) => pay(b, requirements)));
    const before = await balance(payTo);
    const results = await Promise.all(payloads.map((p) => facilitator.settle(p, requirements)));
    expect(results.map((r) => r.success)).to.deep.equal([true, true, true, true, true]);
    expect(await balance(payTo)).to.equal(before + 5n * AMOUNT);
  });

  describe("createFacilitator", function () {
    let server: Server;
    let remote: Facilitator;

    // A minimal facilitator HTTP service (POST /verify, POST /settle, GET /supported) in front of the in-process
    // one; refusals come back as 400 with the result, as some facilitators answer.
    before(async function () {
      server = createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
        };
        if (req.method === "GET" && req.url === "/supported") {
          send(200, await facilitator.supported());
          return;
        }
        const { paymentPayload, paymentRequirements } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          paymentPayload: AnyPaymentPayload;
          paymentRequirements: AnyPaymentRequirements;
        };
        if (req.url === "/verify") {
          const r = await facilitator.verify(paymentPayload, paymentRequirements);
          send(r.isValid ? 200 : 400, r);
          return;
        }
        if (req.url === "/settle") {
          const r = await facilitator.settle(paymentPayload, paymentRequirements);
          send(r.success ? 200 : 400, r);
          return;
        }
        send(404, { error: "not found" });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const { port } = server.address() as AddressInfo;
      remote = createFacilitator({ url: `http://127.0.0.1:${port}`, rpcUrl: chain.rpcUrl, chainId: chain.chainId });
    });

    after(async function () {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it("talks to a remote facilitator when a URL is set, returning refusals as values", async function () {
      const buyer = await fundedBuyer();
      const requirements = requirementsV2();
      const payload = await pay(buyer, requirements);
      expect((await remote.supported()).kinds.map((k) => k.network)).to.include("eip155:8453");
      expect(await remote.verify(payload, requirements)).to.include({ isValid: true });
      const settled = await remote.settle(payload, requirements);
      expect(settled.success).to.equal(true);
      expect(settled.transaction).to.match(/^0x[0-9a-f]{64}$/);
      expect(await remote.verify(payload, requirements)).to.include({
        isValid: false,
        invalidReason: "invalid_exact_evm_nonce_already_used",
      });
      expect(await remote.settle(payload, requirements)).to.include({
        success: false,
        errorReason: "invalid_exact_evm_nonce_already_used",
      });
    });

    it("builds the in-process facilitator without a URL and requires its key", function () {
      expect(() => createFacilitator({ rpcUrl: chain.rpcUrl, chainId: chain.chainId })).to.throw(/privateKey/);
      const local = createFacilitator({
        rpcUrl: chain.rpcUrl,
        chainId: chain.chainId,
        privateKey: Wallet.createRandom().privateKey,
      });
      expect(local).to.have.property("address");
    });
  });
});
