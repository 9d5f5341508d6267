// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title The EIP-712 digests of the x402 schemes the wallet signs, as the @x402/evm 2.27.0 clients compute them.
/// @notice Batch settlement (domain "x402 Batch Settlement" version "1" at the channel contract): ChannelConfig (its
/// hash is the channel id) and Voucher; USDC's ReceiveWithAuthorization (a deposit through the ERC-3009 collector);
/// Permit2's PermitWitnessTransferFrom with the upto Witness (domain "Permit2", no version, at Permit2).
library X402Digests {
    bytes32 internal constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    /// @dev Permit2's domain has no version.
    bytes32 internal constant PERMIT2_DOMAIN_TYPEHASH = keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 internal constant CHANNEL_CONFIG_TYPEHASH =
        keccak256(
            "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
        );
    bytes32 internal constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 internal constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH =
        keccak256(
            "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
        );
    bytes32 internal constant PERMIT_WITNESS_TYPEHASH =
        keccak256(
            "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)"
        );
    bytes32 internal constant TOKEN_PERMISSIONS_TYPEHASH = keccak256("TokenPermissions(address token,uint256 amount)");
    bytes32 internal constant UPTO_WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    function batchSettlementSeparator(address channelContract) internal view returns (bytes32) {
        return
            keccak256(
                abi.encode(EIP712_DOMAIN_TYPEHASH, keccak256("x402 Batch Settlement"), keccak256("1"), block.chainid, channelContract)
            );
    }

    function permit2Separator(address permit2) internal view returns (bytes32) {
        return keccak256(abi.encode(PERMIT2_DOMAIN_TYPEHASH, keccak256("Permit2"), block.chainid, permit2));
    }

    /// @dev The channel id: the ChannelConfig's EIP-712 hash under the channel contract's domain.
    function channelId(bytes32 separator, ISpendPolicy.ChannelConfig calldata config) internal pure returns (bytes32) {
        return MessageHashUtils.toTypedDataHash(separator, keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    function voucher(bytes32 separator, bytes32 channel, uint256 maxClaimableAmount) internal pure returns (bytes32) {
        return MessageHashUtils.toTypedDataHash(separator, keccak256(abi.encode(VOUCHER_TYPEHASH, channel, maxClaimableAmount)));
    }

    function receiveWithAuthorization(
        bytes32 usdcSeparator,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce
    ) internal pure returns (bytes32) {
        return
            MessageHashUtils.toTypedDataHash(
                usdcSeparator,
                keccak256(abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce))
            );
    }

    /// @dev The upto client's Permit2 transfer of at most `c.amount` of `token` to `spender` (the upto proxy), witness
    /// (payTo, facilitator, validAfter).
    function uptoPermit(
        bytes32 permit2Separator_,
        address token,
        address spender,
        ISpendPolicy.Ceiling calldata c
    ) internal pure returns (bytes32) {
        bytes32 permitted = keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, token, c.amount));
        bytes32 witness = keccak256(abi.encode(UPTO_WITNESS_TYPEHASH, c.payTo, c.facilitator, c.validAfter));
        return
            MessageHashUtils.toTypedDataHash(
                permit2Separator_,
                keccak256(abi.encode(PERMIT_WITNESS_TYPEHASH, permitted, spender, c.nonce, c.deadline, witness))
            );
    }
}
