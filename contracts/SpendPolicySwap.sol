// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";
import {OwnerControls} from "./OwnerControls.sol";
import {SwapBoundOracle} from "./swap/SwapBoundOracle.sol";

/// @title What the wallet needs of WETH9.
interface IWETH9 {
    function deposit() external payable;
    function withdraw(uint256 wad) external;
}

/// @title What the wallet needs of SwapRouter02 (IV3SwapRouter.exactOutputSingle; SwapRouter02 has no deadline).
interface IV3SwapRouterExactOutput {
    struct ExactOutputSingleParams {
        address tokenIn;
        address tokenOut;
        uint24 fee;
        address recipient;
        uint256 amountOut;
        uint256 amountInMaximum;
        uint160 sqrtPriceLimitX96;
    }

    function exactOutputSingle(ExactOutputSingleParams calldata params) external payable returns (uint256 amountIn);
}

/// @title A SpendGate agent's swap before settlement: WETH (or its ETH) into exactly one payment's USDC shortfall.
/// @notice The operator (the service) can only ask "buy what payment P is missing". Everything else is fixed here or
/// by the owner: the router, WETH and the Uniswap factory are immutable in the implementation (set by the factory's
/// constructor); tokenOut is USDC and the recipient this wallet; the amount is the payment's shortfall, computed here
/// from the authorised transfer (checked against its stored digest) and the wallet's USDC balance; the price is
/// bounded by SwapBound over the pool the factory derives, with the owner-signed slippage and TWAP window.
/// @dev Why a compromised operator cannot lose the agent's money through this function:
/// - Sandwich (move the pool, then swap): the bound is the pool's TWAP over the owner's window plus the pool fee
///   plus maxSwapSlippageBps, not the spot price; a price moved just before the swap is refused by the router
///   ("Too much requested"), and moving the TWAP means holding the price for the window against arbitrage. The most
///   a swap can overpay is the owner's slippage allowance on one payment's shortfall.
/// - Another token, router, pool or recipient: not parameters. More than the shortfall: the amount is not a parameter.
/// - Repeated swaps: once per payment (RECORD_SWAPPED); the USDC bought stays in the wallet, so it lowers the next
///   payment's shortfall, and it leaves only by a settlement the policy authorised or the owner's Withdraw. So the
///   WETH converted is bounded by the policy's budgets (plus one payment), each conversion within the bound.
/// - A refused swap (router revert, caught): the router's state changes are undone by the revert; the allowance is
///   reset to 0, the ETH wrapped for it is unwrapped, the payment is blocked (13) and released (budget back) in the
///   same transaction. Starving the router call of gas can only produce that refusal, which the operator could get by
///   not paying at all. A TWAP the pool cannot give (too young, no pool) reverts the whole call instead.
/// - Reentrancy: the only external calls are to USDC, WETH9 and the router, all fixed at construction.
abstract contract SpendPolicySwap is OwnerControls {
    using SafeERC20 for IERC20;

    /// @notice The fee tier of the USDC/WETH pool swaps go through: 0.05%.
    uint24 public constant SWAP_POOL_FEE = 500;

    address private immutable _swapRouter;
    address private immutable _weth;
    address private immutable _uniswapFactory;
    SwapBoundOracle private immutable _bound;

    /// @param swap_ all three set, or all zero (a deployment without swaps: swapForPayment always reverts)
    constructor(SwapConfig memory swap_) {
        bool none = swap_.router == address(0) && swap_.weth == address(0) && swap_.uniswapFactory == address(0);
        if (!none && (swap_.router == address(0) || swap_.weth == address(0) || swap_.uniswapFactory == address(0))) {
            revert SpendPolicyZeroAddress();
        }
        _swapRouter = swap_.router;
        _weth = swap_.weth;
        _uniswapFactory = swap_.uniswapFactory;
        if (!none) _bound = new SwapBoundOracle();
    }

    /// @inheritdoc ISpendPolicy
    function swapConfig() external view returns (address router, address weth, address uniswapFactory) {
        return (_swapRouter, _weth, _uniswapFactory);
    }

    /// @dev `record` is the payment's authorisation, already checked against `transfer` and unsettled.
    function _swapForPayment(
        bytes32 paymentId,
        uint256 record,
        string calldata merchant,
        Transfer calldata transfer,
        address usdc
    ) internal returns (bool) {
        {
            PolicyExtras memory e = _extras;
            if (_swapRouter == address(0) || e.maxSwapSlippageBps == 0 || e.swapTwapSeconds == 0 || _limits.paused) {
                revert SpendPolicySwapsDisabled();
            }
        }
        // An expired transfer can never settle: buying for it would only convert the agent's funds.
        if (transfer.validBefore <= block.timestamp) revert SpendPolicyInvalidTransfer();
        // A payment of an earlier epoch can never settle either (the wallet refuses it): nothing is bought for it.
        if ((record >> RECORD_EPOCH_SHIFT) & type(uint16).max != _epochOf(_operatorAndSpend)) {
            revert SpendPolicyUnknownPayment(paymentId);
        }
        uint256 usdcBefore = IERC20(usdc).balanceOf(address(this));
        if ((record >> RECORD_FLAGS_SHIFT) & RECORD_SWAPPED != 0 || usdcBefore >= transfer.amount) {
            revert SpendPolicyNoShortfall(paymentId);
        }
        uint256 shortfall = transfer.amount - usdcBefore;
        (bool ok, uint256 spent, uint256 ethSpent) = _buy(usdc, shortfall);
        if (!ok) {
            emit PaymentBlocked(
                paymentId,
                address(this),
                keccak256(bytes(merchant)),
                merchant,
                transfer.amount,
                BlockReason.SwapSlippageExceeded,
                "",
                0,
                address(0)
            );
            _release(paymentId, record, transfer.amount);
            return false;
        }
        uint256 received = IERC20(usdc).balanceOf(address(this)) - usdcBefore;
        if (received < shortfall) revert SpendPolicySwapFailed(paymentId);
        _payments[paymentId] = record | (RECORD_SWAPPED << RECORD_FLAGS_SHIFT);
        emit SwapExecuted(paymentId, address(this), ethSpent != 0 ? address(0) : _weth, spent, received);
        return true;
    }

    /// @dev exactOutputSingle of `amountOut` USDC for at most SwapBound's maxIn WETH, wrapping the wallet's ETH when its WETH is
    /// short of maxIn and unwrapping what was not spent. Returns whether the router did it, the WETH spent and how much
    /// of that was wrapped ETH; a refusal leaves no allowance and no wrapped ETH behind.
    function _buy(address usdc, uint256 amountOut) private returns (bool ok, uint256 spent, uint256 ethSpent) {
        PolicyExtras memory e = _extras;
        uint256 maxIn = _bound.maxAmountIn(
            _uniswapFactory,
            _weth,
            usdc,
            SWAP_POOL_FEE,
            amountOut,
            e.swapTwapSeconds,
            e.maxSwapSlippageBps
        );
        // The owner's price floor, whatever the TWAP says: at least minSwapRate USDC per 1 WETH (rounded down, so the
        // floor is never crossed). A pool held off-price for the TWAP window no longer sets the agent's price.
        if (e.minSwapRate != 0) {
            uint256 floorIn = (amountOut * 1e18) / e.minSwapRate;
            if (floorIn < maxIn) maxIn = floorIn;
        }
        uint256 wethBefore = IERC20(_weth).balanceOf(address(this));
        uint256 wrapped;
        if (wethBefore < maxIn) {
            wrapped = maxIn - wethBefore;
            if (wrapped > address(this).balance) wrapped = address(this).balance;
            if (wrapped != 0) IWETH9(_weth).deposit{value: wrapped}();
        }
        IERC20(_weth).forceApprove(_swapRouter, maxIn);
        try
            IV3SwapRouterExactOutput(_swapRouter).exactOutputSingle(
                IV3SwapRouterExactOutput.ExactOutputSingleParams(_weth, usdc, SWAP_POOL_FEE, address(this), amountOut, maxIn, 0)
            )
        returns (uint256) {
            ok = true;
        } catch {}
        IERC20(_weth).forceApprove(_swapRouter, 0);
        // The wallet's own WETH is spent first. The router took at most maxIn (its own check, and the allowance).
        spent = wethBefore + wrapped - IERC20(_weth).balanceOf(address(this));
        ethSpent = spent > wethBefore ? spent - wethBefore : 0;
        if (wrapped > ethSpent) IWETH9(_weth).withdraw(wrapped - ethSpent);
        if (spent > maxIn) revert SpendPolicySwapFailed(bytes32(0));
    }
}
