/**
 * The embedded dev faucet: test USDC (minted), ETH (sent by the operator) and WETH (wrapped by the operator and
 * sent), each a real transaction on the embedded chain. Never used outside embedded mode (the route answers 404).
 */
import { Contract, toQuantity } from "ethers";
import type { ChainClient } from "../chain/client";
import { badRequest } from "../errors";
import type { FAUCET_TOKENS } from "../schemas/payments";

const WETH_ABI = ["function deposit() payable", "function transfer(address to, uint256 amount) returns (bool)"];
// The operator's ETH is topped up to twice this when it falls below it, so concurrent faucet calls (at most 1,000
// ETH each) never run it dry; hardhat_setBalance only ever raises it here.
const OPERATOR_FLOOR_WEI = 1_000_000n * 10n ** 18n;

export type FaucetToken = keyof typeof FAUCET_TOKENS;

/**
 * Gives `units` (base units of `token`) to `to`; returns the hash of the transaction that delivered it. WETH is at
 * `weth`, the network's; a network without WETH in the table has none to give (400).
 */
export async function giveFromFaucet(
  chain: ChainClient,
  weth: string | null,
  to: string,
  token: FaucetToken,
  units: bigint,
): Promise<string> {
  if (token === "USDC") {
    const { receipt } = await chain.sendAndWait((o) => chain.usdc.connect(chain.operator).getFunction("mint")(to, units, o));
    return receipt.hash;
  }
  const balance = await chain.provider.getBalance(chain.operator.address);
  if (balance < OPERATOR_FLOOR_WEI) {
    await chain.provider.send("hardhat_setBalance", [chain.operator.address, toQuantity(OPERATOR_FLOOR_WEI * 2n)]);
  }
  if (token === "ETH") {
    const { receipt } = await chain.sendAndWait((o) => chain.operator.sendTransaction({ to, value: units, ...o }));
    return receipt.hash;
  }
  if (!weth) throw badRequest("This network has no WETH (swaps are off on it): the faucet gives USDC and its native coin.");
  const wrapped = new Contract(weth, WETH_ABI, chain.operator);
  await chain.sendAndWait((o) => wrapped.getFunction("deposit")({ value: units, ...o }));
  const { receipt } = await chain.sendAndWait((o) => wrapped.getFunction("transfer")(to, units, o));
  return receipt.hash;
}
