/**
 * "Compromised server", swaps: with the operator key and the agent's signing key, an attacker tries to lose the
 * agent's WETH and ETH through the wallet's swap before settlement (bad price, other token, router, recipient or
 * amount, released, settled or already swapped payments, swaps the policy turned off). Each attempt is refused
 * on-chain; the one swap the policy allowed spent at most its bound.
 */
import { expect } from "chai";
import { runSwapAttacks, type SwapTarget } from "../helpers/attacker";
import { ALLOWLIST, proofFor } from "../helpers/policyFixture";
import { ETH, MERCHANT, SWAP_POLICY, swapFixture } from "../helpers/swapFixture";
import { embeddedChainPerFile } from "../helpers/embeddedChain";

describe("compromised server (swaps): every secret of the service, and the swap bound still holds", function () {
  const chain = embeddedChainPerFile({ keepClock: true });

  it("refuses on-chain every swap the policy does not allow, and loses nothing to the refused ones", async function () {
    const f = await swapFixture(chain);
    await f.giveWeth(ETH(1n));
    await f.giveEth(ETH(1n));
    const { leaf, proof } = proofFor(ALLOWLIST, MERCHANT);
    const target: SwapTarget = {
      agent: f.wallet,
      agentAddress: f.agent,
      token: f.token,
      merchant: { host: MERCHANT, leaf, proof },
      movePrice: () => f.dumpWeth(ETH(100n)),
      turnSwapsOff: () => f.setPolicy({ ...SWAP_POLICY, maxSwapSlippageBps: 0n }),
    };
    const before = await f.balances();
    const attempts = await runSwapAttacks({ operator: f.operator, agentKey: f.agentKey }, target);
    for (const a of attempts) console.log(`      ${a.refused ? "refused" : "WENT THROUGH"}: ${a.name} (${a.detail})`);
    expect(attempts.filter((a) => !a.refused).map((a) => a.name)).to.deep.equal([]);
    expect(attempts.length).to.equal(12);
    // One swap happened (the allowed one, 2 USDC, settled to its payee); nothing else left in WETH, ETH or USDC.
    const after = await f.balances();
    expect(after.usdc).to.equal(before.usdc);
    expect(after.eth).to.equal(before.eth);
    const spent = before.weth - after.weth;
    const events = await f.wallet.queryFilter(f.wallet.filters.SwapExecuted());
    expect(events.length).to.equal(1);
    expect(events[0].args.amountIn).to.equal(spent);
    expect(events[0].args.amountOut).to.equal(2_000_000n);
    // About 3,000 USDC per ETH again after the back-run: 2 USDC within 1% of it cost less than 1/1,000 WETH.
    expect(spent < ETH(1n) / 1_000n).to.equal(true);
  });
});
