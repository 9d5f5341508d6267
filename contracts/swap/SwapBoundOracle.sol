// SPDX-License-Identifier: GPL-2.0-or-later
pragma solidity 0.8.28;

import {SwapBound} from "./SwapBound.sol";

/// @title SwapBound as a stateless contract, so the agent wallet's implementation stays under the code size limit.
/// @notice Deployed once by each SpendPolicy implementation's constructor (its address is immutable there): nobody
/// can point a wallet at another one.
contract SwapBoundOracle {
    /// @notice SwapBound.maxAmountIn: the most `tokenIn` an exactOutput swap of `amountOut` `tokenOut` may spend.
    function maxAmountIn(
        address factory,
        address tokenIn,
        address tokenOut,
        uint24 fee,
        uint256 amountOut,
        uint32 twapSeconds,
        uint16 maxSlippageBps
    ) external view returns (uint256 maxIn) {
        (maxIn, , ) = SwapBound.maxAmountIn(factory, tokenIn, tokenOut, fee, amountOut, twapSeconds, maxSlippageBps);
    }
}
