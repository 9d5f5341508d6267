// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IBatchSettlementChannels} from "./interfaces/x402/IBatchSettlementChannels.sol";
import {ISpendPolicySchemes} from "./ISpendPolicySchemes.sol";
import {OperatorCheck} from "./OperatorCheck.sol";
import {SpendPolicyModule} from "./SpendPolicyModule.sol";

/// @title The wallet's own way out of an x402 batch-settlement channel whose seller never refunds: the payer's timed
/// withdrawal (ISpendPolicySchemes.withdrawChannel, finishChannelWithdraw).
/// @notice Part of SpendPolicySchemes: runs by delegatecall on the wallet's storage. Money only comes back: the
/// channel contract pays a withdrawal to the channel's payer alone, and the wallet asks only for channels whose config
/// it checked at a deposit (payer this wallet, no payerAuthorizer, USDC). No budget changes here: creditChannel then
/// credits what came back with the same proof as after a refund (the channel's balance went down by it).
abstract contract ChannelWithdrawals is SpendPolicyModule, ISpendPolicySchemes {
    /// @notice The x402 batch-settlement channel contract (canonical address on Base; the sandbox's on the embedded chain).
    address public constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    /// @inheritdoc ISpendPolicySchemes
    function withdrawChannel(ChannelConfig calldata config) external returns (uint256 amount) {
        bytes32 channelId = _knownChannel(config);
        (uint128 balance, uint128 claimed) = IBatchSettlementChannels(BATCH_SETTLEMENT).channels(channelId);
        amount = balance - claimed;
        IBatchSettlementChannels(BATCH_SETTLEMENT).initiateWithdraw(config, uint128(amount));
        emit ChannelWithdrawal(channelId, msg.sender, amount, false);
    }

    /// @inheritdoc ISpendPolicySchemes
    function finishChannelWithdraw(ChannelConfig calldata config) external returns (uint256 paid) {
        bytes32 channelId = _knownChannel(config);
        (uint128 before, ) = IBatchSettlementChannels(BATCH_SETTLEMENT).channels(channelId);
        IBatchSettlementChannels(BATCH_SETTLEMENT).finalizeWithdraw(config);
        (uint128 left, ) = IBatchSettlementChannels(BATCH_SETTLEMENT).channels(channelId);
        paid = before - left;
        emit ChannelWithdrawal(channelId, msg.sender, paid, true);
    }

    /// @dev The channel id of `config`: its EIP-712 hash under the channel contract's domain.
    function _channelId(ChannelConfig calldata config) internal view virtual returns (bytes32);

    /// @dev The id of `config` when running in a wallet, the caller is the operator or the owner, and the wallet
    /// authorised a deposit into the channel. Either caller may pull the wallet's own money back: the call moves
    /// nothing anywhere else.
    function _knownChannel(ChannelConfig calldata config) private view returns (bytes32 channelId) {
        _checkDelegated();
        // The operator first: it is who calls as a rule (the owner's slot is read only when it is not).
        if (!OperatorCheck.isOperator(address(uint160(_operatorAndSpend)), msg.sender) && msg.sender != _owner) {
            revert SpendPolicyNotOperatorOrOwner(msg.sender);
        }
        channelId = _channelId(config);
        if (_channels[channelId].deposited == 0) revert SpendPolicyUnknownChannel(channelId);
    }
}
