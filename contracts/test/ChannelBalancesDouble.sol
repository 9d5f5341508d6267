// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title TEST ONLY, temporary: the one view of the x402 batch-settlement channel contract the wallet reads,
/// `channels(channelId)`, with a setter, placed at the canonical address by the wallet's scheme tests until the
/// sandbox channel contract (contracts/test/x402/) lands. Tests move the USDC themselves (impersonating the
/// collector and the channel) and set the balance the real contract would then hold. Never deploy it anywhere.
contract ChannelBalancesDouble {
    struct State {
        uint128 balance;
        uint128 totalClaimed;
    }

    mapping(bytes32 channelId => State) private _channels;

    function setChannel(bytes32 channelId, uint128 balance, uint128 totalClaimed) external {
        _channels[channelId] = State(balance, totalClaimed);
    }

    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed) {
        State storage s = _channels[channelId];
        return (s.balance, s.totalClaimed);
    }
}
