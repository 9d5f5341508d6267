// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IDepositCollector: how the x402 batch-settlement contract pulls a channel deposit from the payer.
/// @notice `deposit(config, amount, collector, collectorData)` on the batch-settlement contract calls `collect` on the
/// named collector, which must move exactly `amount` of `token` from `payer` to the caller; the caller checks its
/// own balance grew by `amount`. `collectorData` is the collector's own encoding of the payer's authorisation.
interface IDepositCollector {
    /// @notice Pulls `amount` of `token` from `payer` to msg.sender, under an authorisation bound to `channelId`.
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData) external;
}
