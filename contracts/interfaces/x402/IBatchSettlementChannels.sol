// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ISpendPolicy} from "../../ISpendPolicy.sol";

/// @title What the SpendGate wallet reads and calls of the x402 batch-settlement channel contract (canonical address
/// 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003; the ABI the x402 evm package 2.27.0 calls).
/// @notice `balance` is what the channel holds for its payer: deposits raise it, refunds and finalised withdrawals
/// (both paid to the config's payer) lower it; claims only raise `totalClaimed` (at most `balance`).
/// The payer's timed withdrawal (ISpendPolicy.ChannelConfig has the ABI of the channel contract's ChannelConfig, so
/// the selectors are the contract's): `initiateWithdraw` asks for at most the unclaimed balance, `finalizeWithdraw`
/// pays what is still unclaimed of it to the payer once the channel's `withdrawDelay` has passed. Both only from the
/// payer (or its payerAuthorizer, which the wallet's channels never have).
interface IBatchSettlementChannels {
    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);
    /// @notice The payer's timed withdrawal in progress (initiatedAt 0: none).
    function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt);
    function initiateWithdraw(ISpendPolicy.ChannelConfig calldata config, uint128 amount) external;
    function finalizeWithdraw(ISpendPolicy.ChannelConfig calldata config) external;
}
