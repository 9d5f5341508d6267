/**
 * A compromised server: whoever holds every secret the service has (the operator key, the agents' signing keys,
 * and through the encryption key and the database, everything else) and tries every way to move an agent's money
 * that its owner-signed policy does not allow. Each attempt goes to the real contracts; the suite asserts each is
 * refused on-chain and counts what left the wallet.
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { BaseWallet, Contract, Signature, type Signer } from "ethers";
import { NO_EXTRA_LIMITS, SET_POLICY_TYPES, TRANSFER_WITH_AUTHORIZATION_TYPES, walletSignature } from "../../src/chain/typedData";
import type { SpendPolicy, TestUSDC } from "../../typechain-types";

const { ethers } = hre;

export interface Secrets {
  /** The operator's key: authorises and releases payments, deploys agents. */
  operator: Signer;
  /** The agent's signing key (the service decrypts it to sign). */
  agentKey: BaseWallet;
}

export interface Target {
  agent: SpendPolicy;
  agentAddress: string;
  token: TestUSDC;
  /** A merchant host the owner allowlisted, its leaf and proof. */
  merchant: { host: string; leaf: string; proof: string[] };
  /** Where the attacker wants the money. */
  thief: string;
}

export interface Attempt {
  name: string;
  /** Resolves when the attempt was refused on-chain (a revert, or a refusal the contract reports). */
  refused: boolean;
  detail: string;
}

const NO_APPROVAL = { approvalId: "", amount: 0n, timestamp: 0n, signature: "0x" };

/** The USDC TransferWithAuthorization digest of a transfer from `from`. */
export async function transferDigest(
  token: TestUSDC,
  from: string,
  t: { to: string; value: bigint; validAfter: bigint; validBefore: bigint; nonce: string },
): Promise<string> {
  const domain = { name: await token.name(), version: await token.version(), chainId: 8453n, verifyingContract: await token.getAddress() };
  return ethers.TypedDataEncoder.hash(domain, TRANSFER_WITH_AUTHORIZATION_TYPES, { from, ...t });
}

/** Sends an EIP-3009 transfer from the agent wallet signed by the agent key, as a facilitator would settle it. */
export async function settleFromWallet(
  s: Secrets,
  target: Target,
  t: { to: string; value: bigint; validAfter: bigint; validBefore: bigint; nonce: string },
): Promise<void> {
  const digest = await transferDigest(target.token, target.agentAddress, t);
  const sig = walletSignature(t.nonce, s.agentKey.signingKey.sign(digest).serialized);
  await (
    await target.token
      .connect(s.operator)
      ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
        target.agentAddress,
        t.to,
        t.value,
        t.validAfter,
        t.validBefore,
        t.nonce,
        sig,
      )
  ).wait();
}

async function refusedOnChain(name: string, action: () => Promise<unknown>): Promise<Attempt> {
  try {
    await action();
    return { name, refused: false, detail: "went through" };
  } catch (err) {
    const msg = (err as Error).message;
    const reason = /reverted with (?:reason string|custom error) '([^']+)'/.exec(msg)?.[1] ?? msg.split("\n")[0].slice(0, 120);
    return { name, refused: true, detail: reason };
  }
}

/**
 * Every attack a stolen server can try on one agent, in order (paying an allowlisted merchant within the policy is
 * the residual risk, bounded by the daily budget: drainWithinPolicy).
 */
export async function runAttacks(s: Secrets, target: Target): Promise<Attempt[]> {
  const { agent, token, agentAddress, merchant, thief } = target;
  const op = agent.connect(s.operator);
  const attempts: Attempt[] = [];
  const now = async () => BigInt(await time.latest());
  const balance = await token.balanceOf(agentAddress);
  const id = () => ethers.hexlify(ethers.randomBytes(32));

  // 1. A direct ERC-20 transfer "from" the wallet: the wallet has no function that moves tokens on its own.
  const erc20 = new Contract(
    agentAddress,
    [
      "function transfer(address,uint256) returns (bool)",
      "function approve(address,uint256) returns (bool)",
      "function execute(address,uint256,bytes)",
    ],
    s.operator,
  );
  attempts.push(await refusedOnChain("direct transfer through the wallet", async () => (await erc20.transfer(thief, balance)).wait()));
  attempts.push(await refusedOnChain("approve through the wallet", async () => (await erc20.approve(thief, balance)).wait()));
  attempts.push(
    await refusedOnChain("arbitrary call through the wallet", async () => (await erc20.execute(await token.getAddress(), 0, "0x")).wait()),
  );

  // 2. An EIP-3009 transfer the policy never authorised, signed by the agent key.
  const validBefore = (await now()) + 600n;
  attempts.push(
    await refusedOnChain("EIP-3009 transfer never authorised", () =>
      settleFromWallet(s, target, { to: thief, value: balance, validAfter: 0n, validBefore, nonce: id() }),
    ),
  );
  // ... and one signed as a plain ECDSA signature (65 bytes), as if the agent key owned the funds.
  attempts.push(
    await refusedOnChain("EIP-3009 transfer with a 65-byte agent-key signature", async () => {
      const t = { to: thief, value: balance, validAfter: 0n, validBefore, nonce: id() };
      const sig = Signature.from(s.agentKey.signingKey.sign(await transferDigest(token, agentAddress, t)));
      await (
        await token
          .connect(s.operator)
          ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)"](
            agentAddress,
            t.to,
            t.value,
            t.validAfter,
            t.validBefore,
            t.nonce,
            sig.v,
            sig.r,
            sig.s,
          )
      ).wait();
    }),
  );

  // 3. An authorised payment (1 unit to a merchant) replayed with another payTo, then another amount.
  const paid = { payTo: ethers.Wallet.createRandom().address, amount: 1n, validAfter: 0n, validBefore };
  const paidId = id();
  await (await op.authorizePayment(paidId, merchant.host, merchant.leaf, 0n, merchant.proof, paid, NO_APPROVAL)).wait();
  attempts.push(
    await refusedOnChain("authorised transfer with another payTo", () =>
      settleFromWallet(s, target, { to: thief, value: 1n, validAfter: 0n, validBefore, nonce: paidId }),
    ),
  );
  attempts.push(
    await refusedOnChain("authorised transfer with another amount", () =>
      settleFromWallet(s, target, { to: paid.payTo, value: balance, validAfter: 0n, validBefore, nonce: paidId }),
    ),
  );
  attempts.push(
    await refusedOnChain("authorised transfer with a later validBefore", () =>
      settleFromWallet(s, target, { to: paid.payTo, value: 1n, validAfter: 0n, validBefore: validBefore + 3600n, nonce: paidId }),
    ),
  );
  // The authorised one itself settles (that is what the policy allowed).
  await settleFromWallet(s, target, { to: paid.payTo, value: 1n, validAfter: 0n, validBefore, nonce: paidId });
  attempts.push(
    await refusedOnChain("the settled transfer replayed", () =>
      settleFromWallet(s, target, { to: paid.payTo, value: 1n, validAfter: 0n, validBefore, nonce: paidId }),
    ),
  );

  // 4. Permit (EIP-2612 with an ERC-1271 "signature" of the wallet) to let the thief pull the balance.
  attempts.push(
    await refusedOnChain("permit for the thief", async () => {
      const deadline = (await now()) + 600n;
      const domain = {
        name: await token.name(),
        version: await token.version(),
        chainId: 8453n,
        verifyingContract: await token.getAddress(),
      };
      const types = {
        Permit: [
          { name: "owner", type: "address" },
          { name: "spender", type: "address" },
          { name: "value", type: "uint256" },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
      };
      const nonce = await token.nonces(agentAddress);
      const digest = ethers.TypedDataEncoder.hash(domain, types, { owner: agentAddress, spender: thief, value: balance, nonce, deadline });
      const sig = walletSignature(paidId, s.agentKey.signingKey.sign(digest).serialized);
      await (
        await token.connect(s.operator)["permit(address,address,uint256,uint256,bytes)"](agentAddress, thief, balance, deadline, sig)
      ).wait();
    }),
  );

  // 5. Release the settled payment to get its amount back into the budget, then release twice.
  attempts.push(await refusedOnChain("release of a settled payment", async () => (await op.releasePayment(paidId, paid)).wait()));
  const openId = id();
  const open = { payTo: thief, amount: 1n, validAfter: 0n, validBefore };
  await (await op.authorizePayment(openId, merchant.host, merchant.leaf, 0n, merchant.proof, open, NO_APPROVAL)).wait();
  await (await op.releasePayment(openId, open)).wait();
  attempts.push(await refusedOnChain("double release", async () => (await op.releasePayment(openId, open)).wait()));
  attempts.push(
    await refusedOnChain("settling a released payment", () =>
      settleFromWallet(s, target, { to: thief, value: 1n, validAfter: 0n, validBefore, nonce: openId }),
    ),
  );
  attempts.push(
    await refusedOnChain("release with a larger amount than authorised", async () => {
      const rid = id();
      const r = { payTo: thief, amount: 1n, validAfter: 0n, validBefore };
      await (await op.authorizePayment(rid, merchant.host, merchant.leaf, 0n, merchant.proof, r, NO_APPROVAL)).wait();
      await (await op.releasePayment(rid, { ...r, amount: 1_000_000n })).wait();
    }),
  );

  // 6. The owner's powers with the operator's or the agent key's signatures.
  const ts = await now();
  const forge = async (signer: Signer, types: Record<string, { name: string; type: string }[]>, message: Record<string, unknown>) =>
    signer.signTypedData({ name: "SpendGate", version: "1", chainId: 8453n, verifyingContract: agentAddress }, types, message);
  const WITHDRAW = {
    Withdraw: [
      { name: "agent", type: "address" },
      { name: "token", type: "address" },
      { name: "to", type: "address" },
      { name: "amount", type: "uint256" },
      { name: "timestamp", type: "uint256" },
    ],
  };
  for (const [who, signer] of [
    ["operator", s.operator],
    ["agent key", s.agentKey],
  ] as const) {
    const w = { agent: agentAddress, token: await token.getAddress(), to: thief, amount: balance, timestamp: ts };
    const sig = await forge(signer, WITHDRAW, w);
    attempts.push(
      await refusedOnChain(`withdrawal signed by the ${who}`, async () =>
        (await op.withdraw(w.token, w.to, w.amount, w.timestamp, sig)).wait(),
      ),
    );
  }
  const SET_OWNER = {
    SetOwner: [
      { name: "agent", type: "address" },
      { name: "newOwner", type: "address" },
      { name: "timestamp", type: "uint256" },
    ],
  };
  const ownerSig = await forge(s.operator, SET_OWNER, { agent: agentAddress, newOwner: thief, timestamp: ts });
  attempts.push(
    await refusedOnChain("take ownership with the operator's signature", async () => (await op.setOwner(thief, ts, ownerSig)).wait()),
  );
  const SET_POLICY = {
    SetPolicy: [
      { name: "agent", type: "address" },
      { name: "perTxLimit", type: "uint256" },
      { name: "dailyBudget", type: "uint256" },
      { name: "allowlistRoot", type: "bytes32" },
      { name: "approvalThreshold", type: "uint256" },
      ...SET_POLICY_TYPES.SetPolicy.slice(5),
    ],
  };
  const loose = {
    perTxLimit: balance,
    dailyBudget: balance,
    allowlistRoot: ethers.ZeroHash,
    approvalThreshold: balance,
    ...NO_EXTRA_LIMITS,
  };
  const policySig = await forge(s.operator, SET_POLICY, { agent: agentAddress, ...loose, timestamp: ts });
  attempts.push(
    await refusedOnChain("raise the limits with the operator's signature", async () =>
      (await op.updatePolicy(loose, ts, policySig)).wait(),
    ),
  );
  return attempts;
}

/** Authorises and settles payments to the thief until the policy blocks them; returns what left the wallet. */
export async function drainWithinPolicy(
  s: Secrets,
  target: Target,
  amount: bigint,
  attemptsMax = 50,
): Promise<{ moved: bigint; blockedReasons: number[] }> {
  const { agent, token, agentAddress, merchant, thief } = target;
  const op = agent.connect(s.operator);
  const before = await token.balanceOf(agentAddress);
  const blockedReasons: number[] = [];
  for (let i = 0; i < attemptsMax; i++) {
    const paymentId = ethers.hexlify(ethers.randomBytes(32));
    const t = { payTo: thief, amount, validAfter: 0n, validBefore: BigInt(await time.latest()) + 600n };
    const receipt = await (await op.authorizePayment(paymentId, merchant.host, merchant.leaf, 0n, merchant.proof, t, NO_APPROVAL)).wait();
    const blocked = receipt!.logs.map((l) => agent.interface.parseLog(l)).find((e) => e?.name === "PaymentBlocked");
    if (blocked) {
      blockedReasons.push(Number(blocked.args.reason));
      break;
    }
    await settleFromWallet(s, target, { to: thief, value: amount, validAfter: 0n, validBefore: t.validBefore, nonce: paymentId });
  }
  return { moved: before - (await token.balanceOf(agentAddress)), blockedReasons };
}

/** What the swap attacks need: the swap fixture's wallet (swaps on), with WETH and ETH, and its helpers. */
export interface SwapTarget {
  agent: SpendPolicy;
  agentAddress: string;
  token: TestUSDC;
  merchant: { host: string; leaf: string; proof: string[] };
  /** Sells WETH into the pool from another account (a sandwich's first leg); resolves to its back-run. */
  movePrice: () => Promise<() => Promise<void>>;
  /** Replaces the policy, owner-signed (the test plays the owner). */
  turnSwapsOff: () => Promise<void>;
}

/**
 * Every way a stolen server can try to lose the agent's WETH or ETH through swapForPayment. Each must be refused
 * on-chain: a revert, or the swap ending as PaymentBlocked(13) with nothing spent.
 */
export async function runSwapAttacks(s: Secrets, t: SwapTarget): Promise<Attempt[]> {
  const op = t.agent.connect(s.operator);
  const attempts: Attempt[] = [];
  const id = () => ethers.hexlify(ethers.randomBytes(32));
  const authorize = async (amount: bigint) => {
    const paymentId = id();
    const transfer = {
      payTo: ethers.Wallet.createRandom().address,
      amount,
      validAfter: 0n,
      validBefore: BigInt(await time.latest()) + 600n,
    };
    await (await op.authorizePayment(paymentId, t.merchant.host, t.merchant.leaf, 0n, t.merchant.proof, transfer, NO_APPROVAL)).wait();
    return { paymentId, transfer };
  };
  const swap = async (p: { paymentId: string; transfer: { payTo: string; amount: bigint; validAfter: bigint; validBefore: bigint } }) => {
    const receipt = await (await op.swapForPayment(p.paymentId, t.merchant.host, p.transfer, { gasLimit: 1_000_000 })).wait();
    const names = receipt!.logs.map((l) => t.agent.interface.parseLog(l)?.name);
    if (names.includes("SwapExecuted")) throw new Error("swapped");
    if (!names.includes("PaymentBlocked")) throw new Error("neither swapped nor blocked");
    throw new Error(`reverted with custom error 'PaymentBlocked(13), released'`);
  };
  // Calls a function the wallet does not have (the attacker's wish list): a router, a token or an amount of its own.
  const crafted = async (signature: string, args: unknown[]) => {
    const c = new Contract(t.agentAddress, [`function ${signature}`], s.operator);
    const name = signature.slice(0, signature.indexOf("("));
    await (await c.getFunction(name)(...args, { gasLimit: 1_000_000 })).wait();
  };
  const abiInputs = t.agent.interface.getFunction("swapForPayment").inputs.map((i) => i.name);
  if (abiInputs.join(",") !== "paymentId,merchant,transfer") throw new Error(`swapForPayment takes ${abiInputs.join(",")}`);
  const evil = ethers.Wallet.createRandom().address;

  const sandwiched = await authorize(2_000_000n);
  const backRun = await t.movePrice();
  attempts.push(await refusedOnChain("swap at a bad price (sandwich)", () => swap(sandwiched)));
  await backRun();
  const p = await authorize(2_000_000n);
  const transferTuple = [p.transfer.payTo, p.transfer.amount, p.transfer.validAfter, p.transfer.validBefore];
  const T = "(address,uint256,uint256,uint256)";
  attempts.push(
    await refusedOnChain("swap into another token", () =>
      crafted(`swapForPayment(bytes32,string,${T},address tokenOut)`, [p.paymentId, t.merchant.host, transferTuple, evil]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap through another router", () =>
      crafted(`swapForPayment(bytes32,string,${T},address router)`, [p.paymentId, t.merchant.host, transferTuple, evil]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap to another recipient", () =>
      crafted(`swapForPayment(bytes32,string,${T},address recipient)`, [p.paymentId, t.merchant.host, transferTuple, evil]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap of a chosen amount", () =>
      crafted(`swapForPayment(bytes32,string,${T},uint256 amountOut)`, [p.paymentId, t.merchant.host, transferTuple, 10n ** 12n]),
    ),
  );
  attempts.push(
    await refusedOnChain("swap of more than the shortfall (a larger transfer than authorised)", () =>
      swap({ paymentId: p.paymentId, transfer: { ...p.transfer, amount: p.transfer.amount * 1_000n } }),
    ),
  );
  attempts.push(
    await refusedOnChain("swap by the agent key", async () =>
      (await t.agent.connect(s.agentKey.connect(ethers.provider)).swapForPayment(p.paymentId, t.merchant.host, p.transfer)).wait(),
    ),
  );
  const released = await authorize(2_000_000n);
  await (await op.releasePayment(released.paymentId, released.transfer)).wait();
  attempts.push(await refusedOnChain("swap for a released payment", () => swap(released)));
  attempts.push(await refusedOnChain("swap for a payment never authorised", () => swap({ paymentId: id(), transfer: p.transfer })));
  // The one swap the policy allows for p, then a second one for the same payment.
  const done = await (await op.swapForPayment(p.paymentId, t.merchant.host, p.transfer, { gasLimit: 1_000_000 })).wait();
  if (!done!.logs.some((l) => t.agent.interface.parseLog(l)?.name === "SwapExecuted")) throw new Error("the allowed swap did not happen");
  attempts.push(await refusedOnChain("a second swap for the same payment", () => swap(p)));
  await settleFromWallet(
    s,
    { agent: t.agent, agentAddress: t.agentAddress, token: t.token, merchant: t.merchant, thief: p.transfer.payTo },
    { to: p.transfer.payTo, value: p.transfer.amount, validAfter: 0n, validBefore: p.transfer.validBefore, nonce: p.paymentId },
  );
  attempts.push(await refusedOnChain("swap for a settled payment", () => swap(p)));
  const later = await authorize(2_000_000n);
  await t.turnSwapsOff();
  attempts.push(await refusedOnChain("swap when the policy says no swaps", () => swap(later)));
  return attempts;
}
