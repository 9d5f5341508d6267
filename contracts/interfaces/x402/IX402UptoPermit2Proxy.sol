// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ISignatureTransfer} from "./ISignatureTransfer.sol";

/// @title IX402UptoPermit2Proxy: the x402 `upto` settlement proxy as the x402 EVM packages call it.
/// @notice Canonical address 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002. The payer signs a Permit2
/// PermitWitnessTransferFrom with this proxy as spender, `permitted.amount` as the ceiling and the witness
/// `Witness(address to,address facilitator,uint256 validAfter)`; the named facilitator settles any amount up to it.
interface IX402UptoPermit2Proxy {
    /// @notice Bound by the payer's signature: the payee, the only caller allowed to settle, and the earliest time.
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    /// @notice An EIP-2612 permit of the token to Permit2, tried before settling (gasless first approval).
    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    event Settled();
    event SettledWithPermit();

    error AmountExceedsPermitted();
    error InvalidAmount();
    error InvalidDestination();
    error InvalidOwner();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();
    error UnauthorizedFacilitator();

    function PERMIT2() external view returns (address);
    function WITNESS_TYPEHASH() external view returns (bytes32);
    function WITNESS_TYPE_STRING() external view returns (string memory);

    function settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external;

    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external;
}
