// SPDX-License-Identifier: GPL-2.0-or-later
pragma solidity 0.8.28;

import {SwapBound} from "../swap/SwapBound.sol";

/// @title SwapBoundHarness: SwapBound's internal functions as external ones, for tests and the gas bench.
/// @notice TEST ONLY.
contract SwapBoundHarness {
    /// @notice SwapBound.maxAmountIn.
    function maxAmountIn(
        address factory,
        address tokenIn,
        address tokenOut,
        uint24 fee,
        uint256 amountOut,
        uint32 twapSeconds,
        uint16 maxSlippageBps
    ) external view returns (uint256 maxIn, int24 twapTick, address pool) {
        return SwapBound.maxAmountIn(factory, tokenIn, tokenOut, fee, amountOut, twapSeconds, maxSlippageBps);
    }

    /// @notice The gas SwapBound.maxAmountIn uses inside a transaction that has not touched the pool yet.
    function gasOfMaxAmountIn(
        address factory,
        address tokenIn,
        address tokenOut,
        uint24 fee,
        uint256 amountOut,
        uint32 twapSeconds,
        uint16 maxSlippageBps
    ) external view returns (uint256 gasUsed) {
        uint256 before = gasleft();
        SwapBound.maxAmountIn(factory, tokenIn, tokenOut, fee, amountOut, twapSeconds, maxSlippageBps);
        gasUsed = before - gasleft();
    }

    /// @notice SwapBound.consult.
    function consult(address pool, uint32 secondsAgo) external view returns (int24) {
        return SwapBound.consult(pool, secondsAgo);
    }

    /// @notice SwapBound.getQuoteAtTick.
    function getQuoteAtTick(int24 tick, uint128 baseAmount, address baseToken, address quoteToken)
        external
        pure
        returns (uint256)
    {
        return SwapBound.getQuoteAtTick(tick, baseAmount, baseToken, quoteToken);
    }

    /// @notice SwapBound.poolFor.
    function poolFor(address factory, address tokenA, address tokenB, uint24 fee) external pure returns (address) {
        return SwapBound.poolFor(factory, tokenA, tokenB, fee);
    }
}
