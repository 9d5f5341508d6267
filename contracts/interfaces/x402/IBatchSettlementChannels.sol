// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title What the SpendGate wallet reads of the x402 batch-settlement channel contract (canonical address
/// 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003; the ABI the x402 evm package 2.27.0 calls).
/// @notice `balance` is what the channel holds for its payer: deposits raise it, refunds and finalised withdrawals
/// (both paid to the config's payer) lower it; claims only raise `totalClaimed` (at most `balance`).
interface IBatchSettlementChannels {
    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);
}
