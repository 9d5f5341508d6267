// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IDepositCollector} from "../../interfaces/x402/IDepositCollector.sol";

/// @notice ERC-3009 `receiveWithAuthorization` with a `bytes` signature (EOA or ERC-1271), as in USDC v2.2.
interface IERC3009Receive {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/// @title ERC-3009 deposit collector: sandbox stand-in for the deployed original on Base; never deploy to a real network.
/// @notice SpendGate's own implementation of the batch-settlement scheme's ERC-3009 collector, placed with
/// hardhat_setCode at the canonical 0x4020806089470a89826cB9fB1f4059150b550004 on the embedded chain only
/// (src/chain/x402Schemes.ts). The payer signs ReceiveWithAuthorization(from = payer, to = this collector,
/// value = deposit, nonce = keccak256(abi.encode(channelId, salt))); the collector receives the tokens and hands them
/// to the channel contract. `collectorData` = abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature).
/// @dev Only the channel contract may call: it alone decides which channel the deposit is credited to, and the nonce
/// ties the payer's signature to that channel, so a signature lifted from a payload cannot fund anything else.
contract ERC3009DepositCollector is IDepositCollector {
    using SafeERC20 for IERC20;

    /// @notice The batch-settlement channel contract this collector serves.
    address public constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    error OnlyBatchSettlement();

    /// @inheritdoc IDepositCollector
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData) external {
        if (msg.sender != BATCH_SETTLEMENT) revert OnlyBatchSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) = abi.decode(
            collectorData,
            (uint256, uint256, uint256, bytes)
        );
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009Receive(token).receiveWithAuthorization(payer, address(this), amount, validAfter, validBefore, nonce, signature);
        IERC20(token).safeTransfer(msg.sender, amount);
    }
}
