// SPDX-License-Identifier: GPL-2.0-or-later
pragma solidity 0.8.28;

import {IUniswapV3Pool} from "@uniswap/v3-core/contracts/interfaces/IUniswapV3Pool.sol";
import {FullMath} from "@uniswap/v4-core/src/libraries/FullMath.sol";
import {TickMath} from "@uniswap/v4-core/src/libraries/TickMath.sol";

/// @title SwapBound: the most an exactOutput swap may spend, from a Uniswap v3 pool's TWAP
/// @notice consult and getQuoteAtTick are v3-periphery's OracleLibrary (solc 0.7), ported to 0.8 with v4-core's
/// TickMath and FullMath: the same arithmetic, including the mean tick's rounding toward negative infinity. The
/// bound grosses the TWAP quote up by the pool's fee (charged on the input) and by a slippage allowance; each of those
/// divisions rounds down, so rounding never widens what the agent may spend.
/// @dev The pool is derived from the factory (CREATE2, as v3-periphery's PoolAddress), so a caller cannot point the
/// bound at a contract that merely answers like a pool.
library SwapBound {
    // ---------------------------------------------------------------- errors
    /// @notice A TWAP over zero seconds is the spot price: refused.
    error SwapBoundZeroWindow();
    /// @notice The pool has no observation `twapSeconds` old (Uniswap's `OLD`): too young, or too few observations.
    error SwapBoundTwapUnavailable(address pool, uint32 twapSeconds);
    /// @notice No pool of this pair and fee tier exists at the factory.
    error SwapBoundNoPool(address pool);
    /// @notice The amount does not fit the oracle's uint128 quote.
    error SwapBoundAmountTooLarge(uint256 amountOut);

    // ---------------------------------------------------------------- constants
    /// @dev keccak256 of UniswapV3Pool's creation code (v3-periphery PoolAddress; the same on Base).
    bytes32 internal constant POOL_INIT_CODE_HASH = 0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54;
    uint256 private constant FEE_PIPS = 1e6;
    uint256 private constant BPS = 1e4;

    // ---------------------------------------------------------------- bound
    /// @notice The most `tokenIn` an exactOutput swap of `amountOut` `tokenOut` may spend in the `fee` pool of
    /// `factory`: the quote at the arithmetic-mean tick of the last `twapSeconds`, plus the pool fee, plus
    /// `maxSlippageBps`. Also returns that tick and the pool.
    function maxAmountIn(
        address factory,
        address tokenIn,
        address tokenOut,
        uint24 fee,
        uint256 amountOut,
        uint32 twapSeconds,
        uint16 maxSlippageBps
    ) internal view returns (uint256 maxIn, int24 twapTick, address pool) {
        if (amountOut > type(uint128).max) revert SwapBoundAmountTooLarge(amountOut);
        pool = poolFor(factory, tokenIn, tokenOut, fee);
        if (pool.code.length == 0) revert SwapBoundNoPool(pool);
        twapTick = consult(pool, twapSeconds);
        uint256 atTwap = getQuoteAtTick(twapTick, uint128(amountOut), tokenOut, tokenIn);
        uint256 withFee = FullMath.mulDiv(atTwap, FEE_PIPS, FEE_PIPS - fee);
        maxIn = FullMath.mulDiv(withFee, BPS + maxSlippageBps, BPS);
    }

    /// @notice The v3 pool of two tokens and a fee tier at `factory` (v3-periphery PoolAddress.computeAddress).
    function poolFor(address factory, address tokenA, address tokenB, uint24 fee) internal pure returns (address) {
        (address token0, address token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
        bytes32 salt = keccak256(abi.encode(token0, token1, fee));
        return address(uint160(uint256(keccak256(abi.encodePacked(hex"ff", factory, salt, POOL_INIT_CODE_HASH)))));
    }

    // ---------------------------------------------------------------- OracleLibrary
    /// @notice OracleLibrary.consult's arithmetic mean tick over the last `secondsAgo` seconds, rounded toward
    /// negative infinity; `OLD` from the pool becomes SwapBoundTwapUnavailable.
    function consult(address pool, uint32 secondsAgo) internal view returns (int24 arithmeticMeanTick) {
        if (secondsAgo == 0) revert SwapBoundZeroWindow();
        uint32[] memory secondsAgos = new uint32[](2);
        secondsAgos[0] = secondsAgo;
        secondsAgos[1] = 0;
        int56[] memory tickCumulatives;
        try IUniswapV3Pool(pool).observe(secondsAgos) returns (int56[] memory cumulatives, uint160[] memory) {
            tickCumulatives = cumulatives;
        } catch Error(string memory reason) {
            if (keccak256(bytes(reason)) == keccak256("OLD")) revert SwapBoundTwapUnavailable(pool, secondsAgo);
            revert(reason);
        }
        int56 tickCumulativesDelta = tickCumulatives[1] - tickCumulatives[0];
        int56 period = int56(uint56(secondsAgo));
        arithmeticMeanTick = int24(tickCumulativesDelta / period);
        // Always round to negative infinity
        if (tickCumulativesDelta < 0 && (tickCumulativesDelta % period != 0)) arithmeticMeanTick--;
    }

    /// @notice OracleLibrary.getQuoteAtTick: how much `quoteToken` `baseAmount` of `baseToken` is worth at `tick`.
    function getQuoteAtTick(int24 tick, uint128 baseAmount, address baseToken, address quoteToken)
        internal
        pure
        returns (uint256 quoteAmount)
    {
        uint160 sqrtRatioX96 = TickMath.getSqrtPriceAtTick(tick);
        // Calculate quoteAmount with better precision if it doesn't overflow when multiplied by itself
        if (sqrtRatioX96 <= type(uint128).max) {
            uint256 ratioX192 = uint256(sqrtRatioX96) * sqrtRatioX96;
            quoteAmount = baseToken < quoteToken
                ? FullMath.mulDiv(ratioX192, baseAmount, 1 << 192)
                : FullMath.mulDiv(1 << 192, baseAmount, ratioX192);
        } else {
            uint256 ratioX128 = FullMath.mulDiv(sqrtRatioX96, sqrtRatioX96, 1 << 64);
            quoteAmount = baseToken < quoteToken
                ? FullMath.mulDiv(ratioX128, baseAmount, 1 << 128)
                : FullMath.mulDiv(1 << 128, baseAmount, ratioX128);
        }
    }
}
