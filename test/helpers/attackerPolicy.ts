/**
 * The attacks on an agent's policy and wallet with every secret the service has: moving tokens around the policy,
 * replaying or bending authorised payments, permits, releases and the owner's powers; and the residual risk, paying
 * within the policy until it blocks.
 */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { Contract, Signature, type Signer } from "ethers";
import { NO_EXTRA_LIMITS, SET_OWNER_TYPES, SET_POLICY_TYPES, WITHDRAW_TYPES, walletSignature } from "../../src/chain/typedData";
import { PERMIT_TYPES } from "./x402SchemeContracts";
import { NO_APPROVAL, refusedOnChain, settleFromWallet, transferDigest, type Attempt, type Secrets, type Target } from "./attackerBase";

const { ethers } = hre;

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
  // Where an authorised payment may go: the payee the owner pinned for the entry, or (payee 0) anyone.
  const payee = merchant.leaf.payee !== ethers.ZeroAddress ? merchant.leaf.payee : ethers.Wallet.createRandom().address;
  const paid = { payTo: payee, amount: 1n, validAfter: 0n, validBefore };
  const paidId = id();
  await (await op.authorizePayment(paidId, merchant.host, merchant.leaf, merchant.proof, paid, NO_APPROVAL)).wait();
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
      const nonce = await token.nonces(agentAddress);
      const digest = ethers.TypedDataEncoder.hash(domain, PERMIT_TYPES, {
        owner: agentAddress,
        spender: thief,
        value: balance,
        nonce,
        deadline,
      });
      const sig = walletSignature(paidId, s.agentKey.signingKey.sign(digest).serialized);
      await (
        await token.connect(s.operator)["permit(address,address,uint256,uint256,bytes)"](agentAddress, thief, balance, deadline, sig)
      ).wait();
    }),
  );

  // 5. Release the settled payment to get its amount back into the budget, then release twice.
  attempts.push(await refusedOnChain("release of a settled payment", async () => (await op.releasePayment(paidId, paid)).wait()));
  const openId = id();
  const open = { payTo: payee, amount: 1n, validAfter: 0n, validBefore };
  await (await op.authorizePayment(openId, merchant.host, merchant.leaf, merchant.proof, open, NO_APPROVAL)).wait();
  await (await op.releasePayment(openId, open)).wait();
  attempts.push(await refusedOnChain("double release", async () => (await op.releasePayment(openId, open)).wait()));
  attempts.push(
    await refusedOnChain("settling a released payment", () =>
      settleFromWallet(s, target, { to: payee, value: 1n, validAfter: 0n, validBefore, nonce: openId }),
    ),
  );
  attempts.push(
    await refusedOnChain("release with a larger amount than authorised", async () => {
      const rid = id();
      const r = { payTo: payee, amount: 1n, validAfter: 0n, validBefore };
      await (await op.authorizePayment(rid, merchant.host, merchant.leaf, merchant.proof, r, NO_APPROVAL)).wait();
      await (await op.releasePayment(rid, { ...r, amount: 1_000_000n })).wait();
    }),
  );

  // 6. The owner's powers with the operator's or the agent key's signatures.
  const ts = await now();
  const forge = async (signer: Signer, types: Record<string, { name: string; type: string }[]>, message: Record<string, unknown>) =>
    signer.signTypedData({ name: "SpendGate", version: "1", chainId: 8453n, verifyingContract: agentAddress }, types, message);
  for (const [who, signer] of [
    ["operator", s.operator],
    ["agent key", s.agentKey],
  ] as const) {
    const w = { agent: agentAddress, token: await token.getAddress(), to: thief, amount: balance, timestamp: ts };
    const sig = await forge(signer, WITHDRAW_TYPES, w);
    attempts.push(
      await refusedOnChain(`withdrawal signed by the ${who}`, async () =>
        (await op.withdraw(w.token, w.to, w.amount, w.timestamp, sig)).wait(),
      ),
    );
  }
  const ownerSig = await forge(s.operator, SET_OWNER_TYPES, { agent: agentAddress, newOwner: thief, timestamp: ts });
  attempts.push(
    await refusedOnChain("take ownership with the operator's signature", async () => (await op.setOwner(thief, ts, ownerSig)).wait()),
  );
  const loose = {
    perTxLimit: balance,
    dailyBudget: balance,
    merchants: [],
    approvalThreshold: balance,
    ...NO_EXTRA_LIMITS,
  };
  const policySig = await forge(s.operator, SET_POLICY_TYPES, { agent: agentAddress, ...loose, timestamp: ts });
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
    const receipt = await (await op.authorizePayment(paymentId, merchant.host, merchant.leaf, merchant.proof, t, NO_APPROVAL)).wait();
    const blocked = receipt!.logs.map((l) => agent.interface.parseLog(l)).find((e) => e?.name === "PaymentBlocked");
    if (blocked) {
      blockedReasons.push(Number(blocked.args.reason));
      break;
    }
    await settleFromWallet(s, target, { to: thief, value: amount, validAfter: 0n, validBefore: t.validBefore, nonce: paymentId });
  }
  return { moved: before - (await token.balanceOf(agentAddress)), blockedReasons };
}
