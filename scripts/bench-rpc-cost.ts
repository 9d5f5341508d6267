/**
 * npx tsx scripts/bench-rpc-cost.ts: what one JSON-RPC call of each kind a payment makes costs the chain process (the
 * embedded Hardhat chain, scripts/chain.ts, in its own process as in the cluster): CPU ms per call, read from /proc
 * around RPC_COST_CALLS (500) calls of each, sent 8 at a time, in RPC_COST_ROUNDS (5) rounds (the median is shown).
 * The calls: trivial answers, a view call, the simulation of a USDC transferWithAuthorization (eth_call, as verify and
 * the facilitator's pre-send check run it) against its gas estimate (eth_estimateGas, what viem asked before every
 * settlement), and an automined transfer.
 */
import { spawn } from "node:child_process";
import { Interface, JsonRpcProvider, Wallet, hexlify, randomBytes } from "ethers";
import { usage } from "./bench/throughputCluster";

const CALLS = Number(process.env.RPC_COST_CALLS ?? 500);
const ROUNDS = Number(process.env.RPC_COST_ROUNDS ?? 5);
const USDC = new Interface([
  "function balanceOf(address) view returns (uint256)",
  "function mint(address to, uint256 amount) returns (bool)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
]);
const AUTH_TYPES = {
  TransferWithAuthorization: [
    "from:address",
    "to:address",
    "value:uint256",
    "validAfter:uint256",
    "validBefore:uint256",
    "nonce:bytes32",
  ].map((f) => ({ name: f.split(":")[0], type: f.split(":")[1] })),
};

async function main(): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/chain.ts", "--port", "0", "--json"], {
    cwd: `${__dirname}/..`,
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const info = await new Promise<{ rpcUrl: string; chainId: number; addresses: { usdc: string } }>((resolve, reject) => {
      let text = "";
      child.stdout.on("data", (c: Buffer) => {
        text += c.toString();
        const m = /CHAIN (\{.*\})\n/.exec(text);
        if (m) resolve(JSON.parse(m[1]) as never);
      });
      child.once("exit", (code) => reject(new Error(`the chain exited (${code})`)));
    });
    const provider = new JsonRpcProvider(info.rpcUrl, info.chainId, { staticNetwork: true, cacheTimeout: -1 });
    const payer = new Wallet(Wallet.createRandom().privateKey, provider);
    const usdc = info.addresses.usdc;
    await provider.send("hardhat_setBalance", [payer.address, "0x3635c9adc5dea00000"]);
    await (await payer.sendTransaction({ to: usdc, data: USDC.encodeFunctionData("mint", [payer.address, 10n ** 12n]) })).wait();
    const receiptOf = (await (await payer.sendTransaction({ to: payer.address, value: 1n })).wait())!.hash;
    const auth = {
      from: payer.address,
      to: Wallet.createRandom().address,
      value: 10_000n,
      validAfter: 0n,
      validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
      nonce: hexlify(randomBytes(32)),
    };
    const domain = { name: "USD Coin", version: "2", chainId: info.chainId, verifyingContract: usdc };
    const signature = await payer.signTypedData(domain, AUTH_TYPES, auth);
    const transfer = {
      from: payer.address,
      to: usdc,
      data: USDC.encodeFunctionData("transferWithAuthorization", Object.values(auth).concat(signature)),
    };
    const nonce = await provider.getTransactionCount(payer.address, "pending");
    const raw: string[] = [];
    for (let i = 0; i < CALLS * ROUNDS; i++) {
      raw.push(
        await payer.signTransaction({
          to: payer.address,
          value: 1n,
          nonce: nonce + i,
          gasLimit: 21_000,
          maxFeePerGas: 10n ** 10n,
          maxPriorityFeePerGas: 1n,
          chainId: info.chainId,
          type: 2,
        }),
      );
    }
    let sent = 0;
    const kinds: [string, () => Promise<unknown>, number?][] = [
      ["eth_chainId", () => provider.send("eth_chainId", [])],
      ["eth_getTransactionReceipt", () => provider.send("eth_getTransactionReceipt", [receiptOf])],
      [
        "eth_call balanceOf",
        () => provider.send("eth_call", [{ to: usdc, data: USDC.encodeFunctionData("balanceOf", [payer.address]) }, "latest"]),
      ],
      ["eth_call transferWithAuthorization (500,000 gas)", () => provider.send("eth_call", [{ ...transfer, gas: "0x7a120" }, "latest"])],
      ["eth_estimateGas transferWithAuthorization", () => provider.send("eth_estimateGas", [transfer])],
      ["eth_sendRawTransaction (a transfer, automined)", () => provider.send("eth_sendRawTransaction", [raw[sent++]]), 1],
    ];
    // Rounds of every kind in turn, so a busy moment of the machine does not land on one kind only; the median is shown.
    const spent = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, call, inFlight = 8] of kinds) {
        const before = usage(child.pid ?? 0).cpu;
        let n = 0;
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            while (n++ < CALLS) await call();
          }),
        );
        const ms = ((usage(child.pid ?? 0).cpu - before) * 1000) / CALLS;
        spent.set(name, [...(spent.get(name) ?? []), ms]);
      }
    }
    console.log(`chain process CPU per JSON-RPC call (median of ${ROUNDS} rounds of ${CALLS} calls of each):`);
    for (const [name, samples] of spent) {
      const sorted = [...samples].sort((a, b) => a - b);
      console.log(`  ${name.padEnd(50)} ${sorted[Math.floor(sorted.length / 2)].toFixed(2)} ms`);
    }
    provider.destroy();
  } finally {
    child.kill("SIGTERM");
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
