/**
 * Swap before settlement (docs/payments.md, same title): when the agent wallet holds less USDC than a payment's price and its owner's
 * policy allows swaps, the wallet buys exactly the shortfall with its WETH (then its ETH) on Uniswap v3. The service
 * quotes first (QuoterV2 and the same TWAP bound the wallet enforces) to refuse what cannot work without a
 * transaction, then sends swapForPayment for the authorised payment; the chain is the judge of the price.
 */
import { ZeroAddress, formatEther, getAddress, isCallException, isError, type TransactionReceipt } from "ethers";
import { fromBaseUnits } from "../amounts";
import { appError, type AppError } from "../errors";
import { UNISWAP_POOL_FEE } from "../chain/addresses";
import { addressOf, bind, parseEvent } from "../chain/contracts";
import { type TransferInput, transferStruct } from "../chain/policyOps";
import { type SwapQuote, quoteSwap, readTwapTick } from "../chain/swapQuote";
import { poolAddress, quoteAtTick } from "../chain/uniswapMath";
import type { AgentDoc, PaymentDoc } from "../store/documents";
import type { ServiceContext } from "../services/context";
import { swapView } from "../services/presenters";
import { type Room, finish, note } from "./context";
import type { Blocked } from "./result";

/** Stored on the ledger entry: amounts in base units (wei, USDC's 6 decimals). */
export type SwapRecord = PaymentDoc["swap"] & object;

export type SwapCheck =
  /** The wallet holds the price: nothing to buy. */
  | { kind: "none" }
  | { kind: "refuse"; detail: string }
  /** Buy `shortfall`; `exceeded` when the quote is already past the bound (the chain then records the refusal). */
  | { kind: "swap"; shortfall: bigint; quote: SwapQuote; exceeded: boolean };

/** The swap bought the shortfall. */
export type Swapped = { kind: "swapped"; swapped: SwapRecord };

interface SwapConfig {
  router: string;
  weth: string;
  uniswapFactory: string;
}

// The swap measured about 200k (215k when it wraps ETH, bench:gas); the refusal path spends less.
const SWAP_GAS_LIMIT = 450_000n;

/** A failure after the swap: the budget was released, and the USDC bought stays in the wallet; the answer says so. */
export function withSwapNote(error: AppError, swapped: SwapRecord): AppError {
  const v = swapView(swapped);
  const note = ` The ${v.amountOut} USDC the swap bought (${v.amountIn} ${v.tokenIn}, tx ${v.txHash}) stays in the agent wallet.`;
  return appError(error.code, error.message + note, {
    details: { ...(error.details as object | undefined), swap: v },
    headers: error.headers,
  });
}

export class SwapService {
  /** Every agent is a clone of one implementation: its swap configuration is read once. */
  private config: Promise<SwapConfig> | undefined;

  constructor(private readonly ctx: ServiceContext) {}

  private swapConfig(agent: AgentDoc): Promise<SwapConfig> {
    this.config ??= (async () => {
      try {
        const [router, weth, uniswapFactory] = await this.ctx.chain.policyAt(agent.policyAddress, this.ctx.chain.provider).swapConfig();
        const quoter = this.ctx.config.uniswapQuoterV2;
        // A QuoterV2 address with no code (UNISWAP_QUOTER_V2 for another chain) would fail every quote: no swaps.
        if (!quoter || (await this.ctx.chain.provider.getCode(quoter)) === "0x") {
          this.ctx.logger.warn({ quoter }, "no QuoterV2 at UNISWAP_QUOTER_V2: swaps before settlement are off");
          return { router: ZeroAddress, weth: ZeroAddress, uniswapFactory: ZeroAddress };
        }
        return { router: getAddress(router), weth: getAddress(weth), uniswapFactory: getAddress(uniswapFactory) };
      } catch (err) {
        // An implementation from before swaps has no swapConfig: no swaps there.
        if (isCallException(err)) return { router: ZeroAddress, weth: ZeroAddress, uniswapFactory: ZeroAddress };
        throw err;
      }
    })();
    this.config.catch(() => (this.config = undefined));
    return this.config;
  }

  /**
   * The pool's average (TWAP) price over `seconds`, USDC base units per 1 WETH: what the owner compares her minSwapRate
   * with. Null when this deployment has no swaps, the pool does not exist, or it has no history that long.
   */
  async twapPrice(agent: AgentDoc, seconds: number): Promise<{ pool: string; usdcPerWeth: bigint } | null> {
    const { chain } = this.ctx;
    try {
      // The swap configuration is the implementation's (immutables): read there for an agent not deployed yet, and
      // not through swapConfig(), whose answer is kept for every agent.
      const source = (await chain.isDeployed(agent.policyAddress)) ? agent.policyAddress : await chain.factory.implementation();
      const [router, weth, uniswapFactory] = await chain.policyAt(source, chain.provider).swapConfig();
      if (router === ZeroAddress) return null;
      const usdc = addressOf(chain.usdc);
      const pool = poolAddress(uniswapFactory, weth, usdc, UNISWAP_POOL_FEE);
      if ((await chain.provider.getCode(pool)) === "0x") return null;
      const tick = await readTwapTick(chain.provider, pool, seconds);
      return tick === null ? null : { pool, usdcPerWeth: quoteAtTick(tick, 10n ** 18n, weth, usdc) };
    } catch (err) {
      // An implementation from before swaps, or a pool that cannot answer this window: no price to show.
      if (isCallException(err) || isError(err, "BAD_DATA")) return null;
      throw err;
    }
  }

  /**
   * Whether payment of `amount` needs a swap and whether one can fund it, without sending anything. Called with the
   * agent's lock held, so no other payment of this agent moves its balances meanwhile.
   */
  async check(
    agent: AgentDoc,
    policy: { maxSwapSlippageBps: bigint; swapTwapSeconds: bigint },
    amount: bigint,
    /** The wallet's USDC when the caller has read it already (with the simulation). */
    usdcHeld?: Promise<bigint>,
  ): Promise<SwapCheck> {
    const { chain } = this.ctx;
    const usdc = await (usdcHeld ?? chain.usdc.balanceOf(agent.address));
    if (usdc >= amount) return { kind: "none" };
    const shortfall = amount - usdc;
    const short = `the wallet holds ${fromBaseUnits(usdc)} USDC of the ${fromBaseUnits(amount)} asked`;
    if (policy.maxSwapSlippageBps === 0n || policy.swapTwapSeconds === 0n) {
      return { kind: "refuse", detail: `${short}, and the owner's policy allows no swaps` };
    }
    const cfg = await this.swapConfig(agent);
    const quoterV2 = this.ctx.config.uniswapQuoterV2;
    if (cfg.router === ZeroAddress || !quoterV2) return { kind: "refuse", detail: `${short}, and this deployment has no swaps` };
    const weth = bind("WETH9", cfg.weth, chain.provider);
    const [q, wethBalance, ethBalance] = await Promise.all([
      quoteSwap(chain.provider, {
        factory: cfg.uniswapFactory,
        quoterV2,
        tokenIn: cfg.weth,
        tokenOut: addressOf(chain.usdc),
        fee: UNISWAP_POOL_FEE,
        amountOut: shortfall,
        twapSeconds: Number(policy.swapTwapSeconds),
        maxSlippageBps: Number(policy.maxSwapSlippageBps),
      }),
      weth.balanceOf(agent.address),
      chain.provider.getBalance(agent.address),
    ]);
    if (!q.ok && q.reason === "swap_unavailable") return { kind: "refuse", detail: `${short}, and no swap can buy the rest: ${q.detail}` };
    if (!q.ok || q.quote.amountIn <= wethBalance + ethBalance) {
      return { kind: "swap", shortfall, quote: q.quote, exceeded: !q.ok };
    }
    return {
      kind: "refuse",
      detail: `${short}; buying the missing ${fromBaseUnits(shortfall)} USDC takes about ${formatEther(q.quote.amountIn)} WETH, and the wallet holds ${formatEther(wethBalance)} WETH and ${formatEther(ethBalance)} ETH`,
    };
  }
}

/**
 * swapForPayment for authorised payment `paymentId`: the wallet buys the shortfall within the owner's bound
 * (SwapExecuted), or the router refuses and the wallet blocks and releases the payment in the same transaction
 * (PaymentBlocked 13, PaymentReleased). Writes the outcome to the ledger entry. Throws when the transaction
 * reverts (e.g. the pool has no TWAP over the window); the caller then releases the payment.
 */
export async function swapForPayment(
  room: Room,
  p: {
    txnId: string;
    agent: string;
    ownerAddress: string | null;
    policyAddress: string;
    merchant: string;
    intent: string;
    paymentId: string;
    transfer: TransferInput;
  },
): Promise<Swapped | Blocked> {
  const { chain } = room.ctx;
  const c = chain.policyAt(p.policyAddress);
  const t = transferStruct(p.transfer);
  const { receipt } = await chain.sendAndWait((o) => c.swapForPayment(p.paymentId, p.merchant, t, { ...o, gasLimit: SWAP_GAS_LIMIT }));
  await room.ctx.gas.charge(p.ownerAddress, receipt);
  const events = eventsOf(receipt, p.policyAddress);
  const executed = events.find((e) => e.name === "SwapExecuted");
  if (executed) {
    const swapped: SwapRecord = {
      txHash: receipt.hash,
      tokenIn: executed.args.tokenIn === ZeroAddress ? "ETH" : "WETH",
      amountIn: executed.args.amountIn.toString(),
      amountOut: executed.args.amountOut.toString(),
    };
    await note(room, p.txnId, "authorized", { swap: swapped });
    return { kind: "swapped", swapped };
  }
  if (!events.some((e) => e.name === "PaymentBlocked"))
    throw new Error(`swapForPayment ${receipt.hash} emitted neither SwapExecuted nor PaymentBlocked`);
  const reason = "swap_slippage_exceeded";
  await finish(room, p.txnId, ["authorized"], {
    status: "blocked",
    reason,
    txHash: receipt.hash,
    releaseTxHash: receipt.hash,
    detail:
      "the swap that was to buy the missing USDC was refused on-chain by the owner's TWAP bound; the payment was released in the same transaction",
    onchain: { confirmed: false, blockNumber: receipt.blockNumber },
  });
  return {
    kind: "blocked",
    outcome: {
      status: "blocked",
      reason,
      onchainEvent: "PaymentBlocked",
      txHash: receipt.hash,
      amount: fromBaseUnits(p.transfer.amount),
      merchant: p.merchant,
      intent: p.intent,
      transactionId: p.txnId,
      message:
        "Buying the missing USDC would cost more than the owner's swap slippage bound allows (the pool's price moved away from its average); nothing was spent and the budget was released. Do not retry; report the reason to the owner.",
    },
  };
}

function eventsOf(receipt: TransactionReceipt, address: string) {
  return receipt.logs
    .filter((l) => l.address.toLowerCase() === address.toLowerCase())
    .map((l) => parseEvent("SpendPolicy", l))
    .filter((e) => e !== null);
}
