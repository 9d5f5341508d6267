// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {ISignatureTransfer} from "../../interfaces/x402/ISignatureTransfer.sol";
import {IX402UptoPermit2Proxy} from "../../interfaces/x402/IX402UptoPermit2Proxy.sol";

/// @title x402 upto Permit2 proxy: sandbox stand-in for the deployed original on Base; never deploy to a real network.
/// @notice SpendGate's own implementation of the proxy the `upto` scheme settles through, placed with hardhat_setCode at
/// the canonical 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002 on the embedded chain only (src/chain/x402Schemes.ts).
/// The payer signs a ceiling (`permit.permitted.amount`) with this proxy as Permit2 spender and a witness naming the
/// payee, the one facilitator allowed to settle, and the earliest time; that facilitator settles any amount from 1
/// up to the ceiling, once (Permit2's nonce), to the payee only.
/// @dev Runtime code only: Permit2's address is a constant, and the reentrancy lock reads its never-set slot (zero)
/// as "not entered", so no constructor state is needed. Error names are the ones the x402 EVM upto facilitator maps to reasons.
contract X402UptoPermit2Proxy is IX402UptoPermit2Proxy, ReentrancyGuard {
    /// @inheritdoc IX402UptoPermit2Proxy
    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;

    /// @inheritdoc IX402UptoPermit2Proxy
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";

    /// @inheritdoc IX402UptoPermit2Proxy
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    /// @notice An EIP-2612 permit to Permit2 that did not go through (the approval may exist already).
    event EIP2612PermitFailed(address indexed token, address indexed owner, bytes reason);

    /// @inheritdoc IX402UptoPermit2Proxy
    function settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _settle(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /// @inheritdoc IX402UptoPermit2Proxy
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        _checkCaller(amount, permit, witness);
        try
            IERC20Permit(permit.permitted.token).permit(
                owner,
                PERMIT2,
                permit2612.value,
                permit2612.deadline,
                permit2612.v,
                permit2612.r,
                permit2612.s
            )
        {} catch (bytes memory reason) {
            emit EIP2612PermitFailed(permit.permitted.token, owner, reason);
        }
        _settle(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _checkCaller(uint256 amount, ISignatureTransfer.PermitTransferFrom calldata permit, Witness calldata witness) private view {
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
    }

    /// @dev The payer's signature covers the witness, so `to`, `facilitator` and `validAfter` cannot be changed here.
    function _settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        _checkCaller(amount, permit, witness);
        if (amount == 0) revert InvalidAmount();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        bytes32 witnessHash = keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter));
        ISignatureTransfer(PERMIT2).permitWitnessTransferFrom(
            permit,
            ISignatureTransfer.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
