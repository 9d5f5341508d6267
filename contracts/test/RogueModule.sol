// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @title Test-only wallet module of a hostile factory configurer: SpendPolicy runs it by delegatecall, on the wallet.
/// @notice As `updates` it takes any first policy (initialize lands in the fallback: no signature checked); as
/// `schemes` it hands the wallet's whole balance of a token to anyone.
contract RogueModule {
    fallback() external {}

    function drain(address token, address to) external {
        IERC20(token).transfer(to, IERC20(token).balanceOf(address(this)));
    }
}
