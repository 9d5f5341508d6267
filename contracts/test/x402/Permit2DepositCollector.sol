// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {IDepositCollector} from "../../interfaces/x402/IDepositCollector.sol";
import {ISignatureTransfer} from "../../interfaces/x402/ISignatureTransfer.sol";

/// @title Permit2 deposit collector: sandbox stand-in for the deployed original on Base; never deploy to a real network.
/// @notice SpendGate's own implementation of the batch-settlement scheme's Permit2 collector, placed with
/// hardhat_setCode at the canonical 0x4020425FAf3B746C082C2f942b4E5159887B0005 on the embedded chain only
/// (src/chain/x402Schemes.ts). The payer signs a Permit2 PermitWitnessTransferFrom with this collector as spender,
/// `permitted.amount` = the deposit and the witness DepositWitness(bytes32 channelId); Permit2 moves the tokens
/// straight to the channel contract. `collectorData` = abi.encode(uint256 nonce, uint256 deadline, bytes signature,
/// bytes eip2612) where `eip2612` is empty or abi.encode(uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s),
/// an EIP-2612 permit of the token to Permit2 tried first (its failure is ignored: the approval may exist already).
/// @dev Only the channel contract may call (see ERC3009DepositCollector).
contract Permit2DepositCollector is IDepositCollector {
    /// @notice The batch-settlement channel contract this collector serves.
    address public constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;
    /// @notice Canonical Permit2.
    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;
    /// @notice The witness: the deposit is bound to one channel.
    bytes32 public constant DEPOSIT_WITNESS_TYPEHASH = keccak256("DepositWitness(bytes32 channelId)");
    /// @notice Completes Permit2's PermitWitnessTransferFrom type (referenced types in alphabetical order).
    string public constant WITNESS_TYPE_STRING =
        "DepositWitness witness)DepositWitness(bytes32 channelId)TokenPermissions(address token,uint256 amount)";

    error OnlyBatchSettlement();

    /// @inheritdoc IDepositCollector
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData) external {
        if (msg.sender != BATCH_SETTLEMENT) revert OnlyBatchSettlement();
        (uint256 nonce, uint256 deadline, bytes memory signature, bytes memory eip2612) = abi.decode(
            collectorData,
            (uint256, uint256, bytes, bytes)
        );
        if (eip2612.length > 0) _tryPermit(token, payer, eip2612);
        ISignatureTransfer(PERMIT2).permitWitnessTransferFrom(
            ISignatureTransfer.PermitTransferFrom({
                permitted: ISignatureTransfer.TokenPermissions({token: token, amount: amount}),
                nonce: nonce,
                deadline: deadline
            }),
            ISignatureTransfer.SignatureTransferDetails({to: msg.sender, requestedAmount: amount}),
            payer,
            keccak256(abi.encode(DEPOSIT_WITNESS_TYPEHASH, channelId)),
            WITNESS_TYPE_STRING,
            signature
        );
    }

    function _tryPermit(address token, address payer, bytes memory eip2612) private {
        (uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) = abi.decode(
            eip2612,
            (uint256, uint256, uint8, bytes32, bytes32)
        );
        try IERC20Permit(token).permit(payer, PERMIT2, value, deadline, v, r, s) {} catch {}
    }
}
